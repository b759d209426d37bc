"""Everything that speaks GitHub: webhook verification and reading, and (later) the API client."""
