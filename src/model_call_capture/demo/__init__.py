"""The demo behind `mcc demo`: a scripted model server, an agent and a collector, all local.

`model_server.create_app()` is the scripted model server (all three dialects, JSON and
streaming, with every failure on demand); tests use it as the app behind the capture
middleware. `scenarios` holds what its scripted model says in each dialect.
"""
