"""A weather agent on Google's own SDK (google-genai), tested against a
livesim script instead of the Live API.

Start the server (it serves one connection over wss:// and exits with 0
when the script played to its end):

    cargo run --example serve_script -- --wait

then, with the certificate and base URL it prints:

    pip install google-genai
    SSL_CERT_FILE=/tmp/livesim-serve-PORT.pem python examples/serve/client.py https://127.0.0.1:PORT

The script (examples/serve/weather-first.json) waits for the user's turn,
calls get_weather, then says "It is sunny in Paris.", which this prints.
"""

import asyncio
import sys

from google import genai
from google.genai import types

base_url = sys.argv[1] if len(sys.argv) > 1 else "https://127.0.0.1:43127"
# The key is never checked by livesim, and never printed in its log.
client = genai.Client(api_key="FAKE-KEY", http_options={"base_url": base_url})
config = {
    "response_modalities": ["TEXT"],
    "tools": [{"function_declarations": [{
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
    }]}],
}


def get_weather(city):
    return {"city": city, "sky": "sunny"}


async def main():
    async with client.aio.live.connect(model="gemini-live-2.5-flash-preview", config=config) as session:
        # The client speaks first: the script's `expect` waits for this.
        await session.send_client_content(
            turns={"role": "user", "parts": [{"text": "What's the weather in Paris?"}]},
            turn_complete=True,
        )
        async for message in session.receive():  # until the turn is complete
            if message.tool_call:
                await session.send_tool_response(function_responses=[
                    types.FunctionResponse(id=call.id, name=call.name,
                                           response=get_weather(call.args["city"]))
                    for call in message.tool_call.function_calls
                ])
            if message.text:
                print(message.text)


asyncio.run(main())
