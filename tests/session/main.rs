//! The Live session runtime, tested through its public API against
//! scripted servers: tools, lanes, clocks, lifecycle, and a real WebSocket.

mod clock;
mod lanes;
mod lifecycle;
mod tools;
mod websocket;
