"""``AnviaWidget``: the thin anywidget the transcript and the Studio are drawn in.

Synced state is kept tiny (``mode``, ``title`` and a key): the page gets the transcript through
custom messages (``sync`` -> ``snapshot``, then numbered ``batch`` es), so a saved notebook does
not carry the transcript twice and a long run does not resend a growing trait.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets

__all__ = ["STATIC_DIR", "AnviaWidget"]

#: Where the built front end lives (``js/`` builds it; shipped in the wheel).
STATIC_DIR = Path(__file__).parent.parent / "static"

_MISSING_BUNDLE = """\
export default {
  render({ el }) {
    el.textContent =
      "anvia_notebook: the widget front end is not built (run `npm run build` in js/).";
  },
};
"""

# The anywidget front ends this widget's page code runs on. anywidget asks the page for its own
# minor version (``~0.9.*`` from anywidget 0.9.21), but JupyterLab and Notebook 7 load the
# anywidget of the environment the server runs in, which may be newer than the kernel's (a kernel
# in its own environment, Colab's anywidget 0.9.21 beside a newer JupyterLab): the widget then
# stayed a static copy. Any 0.9 or later 0.x front end draws it.
_FRONT_ENDS = ">=0.9.0 <1.0.0"

MessageHandler = Callable[[dict[str, Any]], None]


def _static(name: str) -> Path | None:
    path = STATIC_DIR / name
    return path if path.is_file() else None


class AnviaWidget(anywidget.AnyWidget):
    """One live view model of a transcript (``mode="transcript"``) or a Studio."""

    _esm = _static("widget.js") or _MISSING_BUNDLE
    if _static("widget.css") is not None:
        _css = _static("widget.css")

    #: ``"transcript"`` (one run) or ``"studio"`` (the Playground).
    mode = traitlets.Unicode("transcript").tag(sync=True)
    #: A short title shown in the header (the agent's name).
    title = traitlets.Unicode("").tag(sync=True)
    #: Unique per widget: anywidget hands ``initialize`` and every ``render`` a different proxy
    #: of the same model, so the page finds the model's one session by this key.
    _anvia_key = traitlets.Unicode().tag(sync=True)

    @traitlets.default("_model_module_version")
    def _default_model_module_version(self) -> str:
        return _front_end_versions()

    @traitlets.default("_view_module_version")
    def _default_view_module_version(self) -> str:
        return _front_end_versions()

    @traitlets.default("_anvia_key")
    def _default_key(self) -> str:
        return uuid.uuid4().hex

    @property
    def anvia_key(self) -> str:
        """This widget's key (see ``_anvia_key``): a static copy's slot names it, so a page that
        has the live model shows it there instead."""
        return str(self._anvia_key)

    def __init__(self, handler: MessageHandler | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._anvia_handler = handler
        self.on_msg(self._on_custom)

    def _on_custom(self, _widget: Any, content: Any, _buffers: Any) -> None:
        handler = self._anvia_handler
        if handler is not None:
            handler(content)


def _front_end_versions() -> str:
    """The anywidget versions the page may load this widget with (a semver range).

    Colab's widget manager fetches the front end from a CDN at exactly anywidget's own range, so
    there it is left as it is; elsewhere any 0.x front end from 0.9 on is accepted as well.
    """
    own = str(anywidget.AnyWidget._model_module_version.default_value)
    if "google.colab" in sys.modules:
        return own
    return f"{own} || {_FRONT_ENDS}"
