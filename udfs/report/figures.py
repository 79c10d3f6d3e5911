"""The report's figures: matplotlib (Agg) to PNG bytes, embedded in the page as ``data:`` URIs."""

from __future__ import annotations

import base64
import io


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png_bytes(fig) -> bytes:
    plt = pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def png(fig) -> str:
    return data_uri(png_bytes(fig))
