CREATE FUNCTION convert_to_celsius
AS 'com.example.ConvertToCelsius' LANGUAGE JAVA
USING JAR '{celsius_jar}'
