"""Integrations: semsearch inside other frameworks' programs, a layer over the Index facade like the CLI.
`langchain` (the `langchain` extra): a LangChain VectorStore and Embeddings. The MCP tools for assistants and
agents live with the servers (server/mcp_tools.py), whose threads and keys they share."""
