-- Personal tokens: MCP tools that act (send, compose, create, change, delete) need their
-- own opt-in, separate from reading (issue 21). 0 for every existing token.
ALTER TABLE api_tokens ADD COLUMN mcp_actions INTEGER NOT NULL DEFAULT 0;
