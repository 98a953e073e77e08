"""Transports: stdio, streamable HTTP and WebSocket, their ASGI apps and guards, a WebSocket client."""
