"""One module per API, named as in protocol/messages: `async def handle(ctx, request)`."""
