#!/usr/bin/env python3
"""A TLS-terminating TCP proxy on loopback for tests/it/temporal.rs: it offers
ALPN h2 with the judge's test certificate (tests/support/judge-tls) and passes
the decrypted bytes to a plaintext gRPC server. Usage: tls_proxy.py CERT KEY
TARGET_PORT; prints "ready PORT" once it listens (port chosen by the OS), and
ends when its stdin closes."""
import asyncio
import ssl
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def main():
    cert, key, target = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["h2"])

    async def handle(reader, writer):
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=ctx)
    print("ready", server.sockets[0].getsockname()[1], flush=True)
    # Ends with the test: its end closes our stdin.
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


asyncio.run(main())
