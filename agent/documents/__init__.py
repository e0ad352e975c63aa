"""A resume as a file (issue 46): PDF, DOCX, plain text and Markdown read into lines.

`reading.read(data, file_name)` turns a file's bytes into a `Document`: its lines in reading order,
each marked visible or hidden (and why: the reasons in `lines.HIDDEN_REASONS`). It runs only in a
worker process with CPU-time, address-space and file-size limits (`sandbox.read_in_worker`): a
hostile file costs a bounded worker, never the server. Pure Python and the two readers' packages
(pypdfium2, python-docx); no Django; nothing is written to disk and nothing is logged.
"""
