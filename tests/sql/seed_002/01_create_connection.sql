CREATE CONNECTION mcp_connection
WITH (
  'type' = 'api-key',
  'api-key' = 'some key'
)
