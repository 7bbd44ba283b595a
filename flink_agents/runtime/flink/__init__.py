"""Host 2: the Flink keyed ProcessFunction, its state and the environment wiring.

Only this package imports ``pyflink``. Importing it checks the installed PyFlink first: a
version outside the supported range (``_pyflink_internals.SUPPORTED_RANGE``) raises
:class:`~flink_agents.errors.UnsupportedFlinkVersionError` naming the range.
"""

from flink_agents.runtime.flink._pyflink_internals import (
    quiet_known_warnings,
    require_supported_version,
)

require_supported_version()
quiet_known_warnings()
