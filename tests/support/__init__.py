"""What the tests share to talk over real loopback sockets, written once.

- `support.hostile`: `HostileServer`, the one scripted provider that writes raw HTTP/1.1 by hand
  as a bad server does (bodies held open, cut, trickled, framed by hand, over TLS, quoting back
  the key), and the wire pieces its replies are made of.
- `support.http`: the client side: a free or closed port, `wait_for_http` for a server that
  starts in another process, `post` to the embedded demo provider, and raw reads with h11.

The embedded demo provider itself (`streamwidgets.server.DemoServer`) is the `demo_server`
fixture of `tests/conftest.py`, one for the whole run (a test that needs its own limits or port
makes its own with `with DemoServer(...)`). `tests/` is on `sys.path` (see `tests/conftest.py`),
so every test folder imports these as `support.hostile`, `support.http`.
"""
