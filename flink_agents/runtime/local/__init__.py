"""Host 1: the in-process runner behind ``from_list`` / ``to_list``."""
