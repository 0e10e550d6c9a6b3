"""Serving plans (pure): replicas versus tensor parallel on one server, throughput, economics and power,
launch commands, quote options and the reverse query (which models fit this hardware)."""
