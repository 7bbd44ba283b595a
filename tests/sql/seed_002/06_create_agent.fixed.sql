CREATE TEMPORARY FUNCTION get_weather AS 'tests.sql.udfs.get_weather' LANGUAGE PYTHON;
CREATE TOOL get_weather_tool USING FUNCTION get_weather
