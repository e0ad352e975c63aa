"""Log records and gunicorn's access logger, as the log tests build them."""

from __future__ import annotations

import io
import logging
import sys

from gunicorn.config import Config


def exc_info_of(exc: BaseException | None):
    """`exc` raised and caught: the exc_info a record carries (None for None)."""
    if exc is None:
        return None
    try:
        raise exc
    except BaseException:
        return sys.exc_info()


def access_logger(lines: io.StringIO):
    """sessions_app/infra/access_log.py's logger as `make run` configures it, writing to `lines`."""
    from sessions_app.infra.access_log import AccessLogger
    from sessions_app.infra.supervisor import ACCESS_LOG_FORMAT

    config = Config()
    config.set("accesslog", "-")
    config.set("access_log_format", ACCESS_LOG_FORMAT)
    logger = AccessLogger(config)
    logger.access_log.handlers = [logging.StreamHandler(lines)]
    return logger
