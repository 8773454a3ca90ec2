#!/usr/bin/env python3
"""Draws the app's icons once (committed under assets/icons/): 192 and 512 px, and a
512 px maskable one whose drawing stays inside the central 80 % safe zone.

usage: python3 scripts/make_icons.py   (needs Pillow; the test venv has it)
"""
from pathlib import Path

from PIL import Image, ImageDraw

ACCENT = (29, 95, 209, 255)
WHITE = (255, 255, 255, 255)
OUT = Path(__file__).resolve().parent.parent / "assets" / "icons"


def draw(size, maskable):
    img = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    if maskable:
        d.rectangle([0, 0, size, size], fill=ACCENT)
        box = size * 0.2  # keep the mark in the safe zone
    else:
        d.rounded_rectangle([0, 0, size - 1, size - 1], radius=size * 0.22, fill=ACCENT)
        box = size * 0.14
    inner = size - 2 * box
    # A switchboard: three lines, each ending in a plug.
    for i in range(3):
        y = box + inner * (0.22 + 0.28 * i)
        x0, x1 = box + inner * 0.08, box + inner * (0.62 + 0.12 * ((i + 1) % 3))
        w = max(2, int(inner * 0.07))
        d.line([(x0, y), (x1, y)], fill=WHITE, width=w)
        r = inner * 0.085
        d.ellipse([x1 - r, y - r, x1 + r, y + r], fill=WHITE)
    return img


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    draw(192, False).save(OUT / "icon-192.png", optimize=True)
    draw(512, False).save(OUT / "icon-512.png", optimize=True)
    draw(512, True).save(OUT / "icon-maskable-512.png", optimize=True)


if __name__ == "__main__":
    main()
