"""Where the palette's "Screenshot" saves (issue 36, finding 9): Textual saves into ~/Downloads and
fails when there is none (a server, a container, a fresh account). The Downloads folder when it
exists, else gpudeck's own screenshots folder (created, owner-only); the notification says where."""

from __future__ import annotations

from pathlib import Path

import platformdirs

from . import paths


def screenshot_dir() -> Path:
    downloads = platformdirs.user_downloads_path()
    if downloads.is_dir():
        return downloads
    return paths.ensure_private(paths.data_dir() / "screenshots")
