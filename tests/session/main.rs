//! The Live session runtime, tested through its public API against
//! scripted servers: tools, lanes, clocks, lifecycle, and a real WebSocket.

mod clock;
mod extract;
mod governance;
mod lanes;
mod lifecycle;
mod resumption;
mod tools;
mod websocket;
