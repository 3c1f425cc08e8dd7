"""Scale-out: batch conversion across processes, GPUs and machines on Ray (``hsd convert --ray``).

Each document is run by ``core.run.DocumentRun``, the loop of a run on one machine (plan and
resume, pages rendered and drafted ahead, saved as they come, the events, the Markdown); only its
page decoder differs: ``RayPageDecoder`` drafts each page on a Ray CPU task and sends it to a model
actor as soon as it is rendered (its drafts join the decode when they come, as on one machine),
whose page events stream back while it decodes.

Modules:

* ``ray_pipeline``  the model actors (``ModelActor``: one model each, a document's pages in order,
                    so it keeps the document's history), ``RayPageDecoder``, ``RayDocuments``
                    (a document per actor at once, their events read in input order) and the
                    ``convert_with_ray`` entry point for Python.
* ``drafting``      ``ClusterDrafter``: the run's drafter, each page drafted on a Ray CPU task by the
                    drafter the run's spec builds, the planned pages after it sent ahead; a
                    run's tasks end early by themselves once the run has ended (``RunEnds``).
* ``inputs``        folders given as inputs become their PDFs and images. No Ray here.
* ``cli``           the ``--ray`` options of ``hsd convert``, whose loop, progress line and
                    epilogue are those of a run on one machine (``core.commands.convert``).

Ray is an optional dependency (``pip install 'hsd-studio[ray]'``); only ``ray_pipeline`` and
``drafting`` import it, and only once a run needs it.
"""
