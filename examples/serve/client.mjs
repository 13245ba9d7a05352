// A weather agent on Google's JavaScript SDK (@google/genai), tested
// against a livesim script instead of the Live API.
//
// Start the server (it serves one connection and exits with 0 when the
// script played to its end):
//
//     livesim serve examples/serve/weather-first.json --port 43127
//
// then, in a folder of its own:
//
//     npm install @google/genai
//     node client.mjs http://127.0.0.1:43127
//
// An http:// base URL makes the SDK connect over plain ws://; with
// `livesim serve --tls`, pass https://127.0.0.1:43127 and trust the
// printed certificate with NODE_EXTRA_CA_CERTS=/tmp/livesim-serve-43127.pem.
// The script waits for the user's turn, calls get_weather, then says
// "It is sunny in Paris.", which this prints.

import { GoogleGenAI } from "@google/genai";

const baseUrl = process.argv[2] ?? "http://127.0.0.1:43127";
// The key is never checked by livesim, and never printed in its log.
const ai = new GoogleGenAI({ apiKey: "FAKE-KEY", httpOptions: { baseUrl } });

// The SDK hands messages to a callback; the loop below reads them in order.
const messages = [];
let wake = null;
const arrived = (message) => {
  messages.push(message);
  if (wake) {
    wake();
    wake = null;
  }
};

const session = await ai.live.connect({
  model: "gemini-live-2.5-flash-preview",
  config: {
    responseModalities: ["TEXT"],
    tools: [{
      functionDeclarations: [{
        name: "get_weather",
        description: "Weather for a city",
        parameters: { type: "OBJECT", properties: { city: { type: "STRING" } } },
      }],
    }],
  },
  callbacks: {
    onmessage: arrived,
    onerror: (e) => console.error("error:", e.message),
    onclose: () => arrived(null),
  },
});

// The client speaks first: the script's `expect` waits for this.
session.sendClientContent({
  turns: [{ role: "user", parts: [{ text: "What's the weather in Paris?" }] }],
  turnComplete: true,
});
for (;;) {
  while (messages.length === 0) await new Promise((resolve) => (wake = resolve));
  const message = messages.shift();
  if (message === null) break;
  if (message.toolCall) {
    session.sendToolResponse({
      functionResponses: message.toolCall.functionCalls.map((call) => ({
        id: call.id,
        name: call.name,
        response: { city: call.args.city, sky: "sunny" },
      })),
    });
  }
  if (message.text) console.log(message.text);
  if (message.serverContent?.turnComplete) break;
}
session.close();
