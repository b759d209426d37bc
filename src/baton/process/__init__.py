"""A running Baton: the parts assembled from the settings (`wiring`), the lanes that decide and write
(`runtime`, `writer`), its metrics and its logs. `baton serve` and `baton worker` start one."""
