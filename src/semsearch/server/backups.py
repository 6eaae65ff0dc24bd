"""`POST /backup`: a backup of the served index (operations/backup.py) into the directory the server was started
with (`--backup-dir`), under a key that may write and sees the whole index (no `where`); without that directory there is no such endpoint's work to do (403).
The body may be empty, or `{"archive": true}` for one .tar.gz. The backup runs on a thread of its own: searches
go on, and writes wait only while the generation is pinned."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from ..operations.backup import backup
from .protocol import ApiError, ServerSettings, read_body
from .schemas import Operation
from .service import Service


async def backup_options(
    request: Request, service: Service, settings: ServerSettings, operation: Operation
) -> bool:
    """Checks the key (a writer that sees the whole index) and that backups are configured; returns whether an
    archive is asked for."""
    service.allowed(request, write=True, whole=True)
    if settings.backup_dir is None:
        raise ApiError(
            403, "backups_disabled", "backups are disabled: start the server with --backup-dir DIR"
        )
    body = (await read_body(request, 1024)).strip()
    if not body:
        return False
    try:
        options = json.loads(body)
    except ValueError as error:
        raise ApiError(400, "bad_json", f"the body is not valid JSON ({error})") from None
    if not isinstance(options, dict) or set(options) - {p.name for p in operation.fields or ()}:
        raise ApiError(400, "bad_parameter", 'the body may hold only {"archive": true or false}')
    return bool(operation.json(options)["archive"])


async def make_backup(index_path: Path, settings: ServerSettings, archive: bool) -> dict[str, Any]:
    """A new backup named for the index and the time (UTC, to the microsecond: two never share a name)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    dest = Path(settings.backup_dir) / f"{index_path.name}-{stamp}{'.tar.gz' if archive else ''}"
    report = await run_in_threadpool(backup, index_path, dest, archive=archive)
    return {"backup": {**dataclasses.asdict(report), "path": str(report.path)}}
