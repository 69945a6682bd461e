"""The provider call: the client, its streaming call, the HTTP stack and its limits, the body on the wire."""
