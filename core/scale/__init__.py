"""Scale-out: batch conversion across processes, GPUs and machines on Ray (``hsd convert --ray``).

Modules:

* ``pages``         a page's two halves as separate work units: render + draft (CPU tasks, the
                    page pipeline ``core.page_pipeline``) and decode (model actors,
                    ``Engine.convert_image``). No Ray here.
* ``jobs``          driver side: inputs to documents planned as on one machine (``core.run``),
                    saving through ``core.export.DocumentOutput``, assembly and statistics. No Ray here.
* ``ray_pipeline``  render tasks and model actors (a document's pages in order on one actor, so it
                    keeps the document's history), progress and the ``convert_with_ray`` entry point.
* ``cli``           the ``--ray`` options of ``hsd convert``.

Ray is an optional dependency (``pip install 'hsd-studio[ray]'``); only ``ray_pipeline`` imports it.
"""
