-- With col id
SELECT * FROM agent_run(
  INPUT => TABLE city_table PARTITION BY session_id, 
  AGENT => AGENT weather_agent, 
  COL => DESCRIPTOR(city), 
  CONFIG => MAP[]);
