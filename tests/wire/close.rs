//! Close frames: code, class and redacted reason.

use livesim::wire::{CloseClass, Decoded, Frame, ServerMessage, decode};

#[test]
fn close_frames_are_classified_with_their_reasons() {
    let cases = [
        (
            1007,
            "API key not valid. Please pass a valid API key.",
            CloseClass::Fatal,
        ),
        (
            1007,
            "Invalid JSON payload received. Unknown name \"x\" at 'setup': Cannot find field.",
            CloseClass::Fatal,
        ),
        (
            1008,
            "models/x is not found for API version v1beta, or is not supported for bidiGenerateContent. Call",
            CloseClass::Fatal,
        ),
        (
            1008,
            "BidiGenerateContent session not found",
            CloseClass::ResumeRejected,
        ),
        // However a proxy capitalizes it, a stale handle is a stale handle.
        (
            1007,
            "BidiGenerateContent Session Not Found",
            CloseClass::ResumeRejected,
        ),
        (1008, "Requested entity was not found.", CloseClass::Fatal),
        (1000, "", CloseClass::Retryable),
        (1001, "", CloseClass::Retryable),
        (1002, "", CloseClass::Retryable),
        (1009, "", CloseClass::Retryable),
        (1011, "Internal error encountered.", CloseClass::Retryable),
        (
            1011,
            "Deadline expired before operation could complete.",
            CloseClass::Retryable,
        ),
    ];
    for (code, reason, class) in cases {
        let Decoded::Closed(closed) = decode::<ServerMessage>(&Frame::close(code, reason)).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (closed.code, closed.class, closed.reason.as_str()),
            (code, class, reason)
        );
    }
    let Decoded::Closed(none) = decode::<ServerMessage>(&Frame::Close(None)).unwrap() else {
        panic!()
    };
    assert_eq!((none.code, none.class), (1005, CloseClass::Retryable));
}

#[test]
fn close_reasons_are_redacted_and_truncated_reasons_kept() {
    let Decoded::Closed(closed) = decode::<ServerMessage>(&Frame::close(
        1008,
        "token auth_tokens/abcDEF123 rejected for wss://h/ws?access_token=auth_tokens/abcDEF123",
    ))
    .unwrap() else {
        panic!()
    };
    assert!(!closed.reason.contains("abcDEF123"), "{}", closed.reason);
    // A 123-byte reason cut mid-word by the server arrives as it is.
    let cut = "x".repeat(100) + " is not supported for bidiGenerate";
    let cut = &cut[..123];
    let Decoded::Closed(closed) = decode::<ServerMessage>(&Frame::close(1008, cut)).unwrap() else {
        panic!()
    };
    assert_eq!(closed.reason, cut);
    assert_eq!(closed.class, CloseClass::Fatal);
}
