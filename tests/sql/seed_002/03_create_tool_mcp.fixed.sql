CREATE TOOL mcp_server
USING CONNECTION mcp_connection
WITH (
  'type' = 'mcp',
  'endpoint' = '{mcp_endpoint}',
  'allowed_tools' = 'tool1,tool2',
  'read_timeout' = '30s'
)
