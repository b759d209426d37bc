"""What Baton takes from the machine it runs on: its settings (environment variables and `.env`), the time
it acts on, and the TLS context of its HTTPS calls. Nothing of Baton's is imported here, so every layer may use it."""
