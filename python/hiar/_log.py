"""hiar's log lines into Python's logging, through hiar_log_set_handler.

A line of subsystem SHM goes to the logger "hiar.SHM" at the level HIAR_DEBUG
named (WARN: WARNING, INFO: INFO, TRACE: DEBUG); HIAR_DEBUG and
HIAR_DEBUG_SUBSYS still decide which lines hiar writes at all.
"""
import logging

from ._lib import LOG_HANDLER, check, lib

_LEVELS = {1: logging.WARNING, 2: logging.INFO, 3: logging.DEBUG}


def _forward(_arg, level, subsys, line):
    # Runs inside a hiar call, on its thread; ctypes took the GIL for it.
    logging.getLogger("hiar." + subsys.decode()).log(_LEVELS.get(level, logging.DEBUG), "%s", line.decode())


# The C side keeps only the function pointer: this object must outlive it.
_handler = LOG_HANDLER(_forward)
_installed = False


def install():
    """Routes hiar's log to logging (idempotent)."""
    global _installed
    if not _installed:
        check("hiar_log_set_handler", lib().hiar_log_set_handler(_handler, None))
        _installed = True


def uninstall():
    """Back to stderr / HIAR_DEBUG_FILE, e.g. before logging shuts down at exit."""
    global _installed
    if _installed:
        check("hiar_log_set_handler", lib().hiar_log_set_handler(LOG_HANDLER(), None))
        _installed = False
