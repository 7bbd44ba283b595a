"""Python UDFs the SQL tests register in Flink's catalog and turn into tools."""

from __future__ import annotations

from pyflink.table import DataTypes
from pyflink.table.udf import ScalarFunction, udf


@udf(result_type=DataTypes.STRING())
def get_weather(city: str) -> str:
    """The weather of a city.

    Args:
        city: the city's name.
    """
    return f"sunny in {city}" if city.lower() != "london" else f"rainy in {city}"


class Shout(ScalarFunction):
    """Upper-cases a text."""

    def eval(self, text: str) -> str:
        return text.upper()


shout = udf(Shout(), result_type=DataTypes.STRING())
