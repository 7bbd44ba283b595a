CREATE AGENT weather_agent
USING MODEL openai
USING PROMPT 'Find weather info for provided city'
USING TOOLS mcp_server, get_weather_tool
WITH (
  'provider' = 'default'
)
