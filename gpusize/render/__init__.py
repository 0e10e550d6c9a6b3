"""Rendering (no arithmetic beyond unit conversion): reports -> text for a terminal (`tables`), and
Markdown, CSV, HTML and SVG exports. Every string that came from a file, the network or another
program is made safe for the terminal (`text.safe`) before it is written."""
