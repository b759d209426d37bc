"""An agent's side of Baton: the HTTP client of the agent API (`agent`), the `baton` commands agents run
(`agent_commands`) and the MCP server over the same client (`mcp`). It never touches the database."""
