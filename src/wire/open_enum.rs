//! Open enums: protocol enum strings that keep values this version does not
//! know.
//!
//! The Live API adds enum values without notice (new turn-complete reasons,
//! new modalities). A closed Rust enum would make such a frame undecodable,
//! so every protocol enum here has an `Other(String)` variant that carries
//! the unknown spelling through decode and encode unchanged.

/// Declares an open enum: known variants with their wire spellings, plus
/// `Other(String)` for anything else, serialised as a plain JSON string.
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value this version of livesim does not know, kept as sent.
            Other(String),
        }

        impl $name {
            /// The spelling on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $wire, )*
                    Self::Other(other) => other,
                }
            }

            /// Whether this is a value livesim knows (not `Other`).
            pub fn is_known(&self) -> bool {
                !matches!(self, Self::Other(_))
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                match value {
                    $( $wire => Self::$variant, )*
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl ::serde::de::Visitor<'_> for Visitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(concat!("a ", stringify!($name), " string"))
                    }
                    fn visit_str<E: ::serde::de::Error>(self, value: &str) -> Result<$name, E> {
                        Ok($name::from(value))
                    }
                }
                deserializer.deserialize_str(Visitor)
            }
        }
    };
}

open_enum! {
    /// A kind of content: what a session responds with, or what a token
    /// count measured.
    pub enum Modality {
        /// Text.
        Text = "TEXT",
        /// Audio.
        Audio = "AUDIO",
        /// Images.
        Image = "IMAGE",
        /// Video.
        Video = "VIDEO",
        /// Documents.
        Document = "DOCUMENT",
        /// Unspecified.
        Unspecified = "MODALITY_UNSPECIFIED",
    }
}

open_enum! {
    /// How readily the server's voice activity detection hears speech start.
    pub enum StartSensitivity {
        /// The server's default.
        Unspecified = "START_SENSITIVITY_UNSPECIFIED",
        /// Speech start is detected more often.
        High = "START_SENSITIVITY_HIGH",
        /// Speech start is detected less often.
        Low = "START_SENSITIVITY_LOW",
    }
}

open_enum! {
    /// How readily the server's voice activity detection hears speech end.
    pub enum EndSensitivity {
        /// The server's default.
        Unspecified = "END_SENSITIVITY_UNSPECIFIED",
        /// Speech end is detected more often.
        High = "END_SENSITIVITY_HIGH",
        /// Speech end is detected less often.
        Low = "END_SENSITIVITY_LOW",
    }
}

open_enum! {
    /// What user activity does to a model turn in progress.
    pub enum ActivityHandling {
        /// The server's default.
        Unspecified = "ACTIVITY_HANDLING_UNSPECIFIED",
        /// User activity interrupts the model (the default behaviour).
        StartOfActivityInterrupts = "START_OF_ACTIVITY_INTERRUPTS",
        /// The model finishes its turn regardless.
        NoInterruption = "NO_INTERRUPTION",
    }
}

open_enum! {
    /// Which realtime input a user turn includes.
    pub enum TurnCoverage {
        /// The server's default.
        Unspecified = "TURN_COVERAGE_UNSPECIFIED",
        /// Only input during detected activity (the default behaviour).
        OnlyActivity = "TURN_INCLUDES_ONLY_ACTIVITY",
        /// All input since the last turn, silence included.
        AllInput = "TURN_INCLUDES_ALL_INPUT",
    }
}

open_enum! {
    /// Whether the model waits for a function's response.
    pub enum Behavior {
        /// The server's default.
        Unspecified = "UNSPECIFIED",
        /// The model waits for the response (the default behaviour).
        Blocking = "BLOCKING",
        /// The model carries on; the response arrives later.
        NonBlocking = "NON_BLOCKING",
    }
}

open_enum! {
    /// Resolution the model samples media input at.
    pub enum MediaResolution {
        /// The server's default.
        Unspecified = "MEDIA_RESOLUTION_UNSPECIFIED",
        /// Low resolution.
        Low = "MEDIA_RESOLUTION_LOW",
        /// Medium resolution.
        Medium = "MEDIA_RESOLUTION_MEDIUM",
        /// High resolution.
        High = "MEDIA_RESOLUTION_HIGH",
    }
}

open_enum! {
    /// When the model takes up a non-blocking function's response.
    pub enum Scheduling {
        /// The server's default.
        Unspecified = "SCHEDULING_UNSPECIFIED",
        /// Add it to the context without prompting a response.
        Silent = "SILENT",
        /// Take it up once the model is idle (the default behaviour).
        WhenIdle = "WHEN_IDLE",
        /// Interrupt the model and take it up at once.
        Interrupt = "INTERRUPT",
    }
}

open_enum! {
    /// Why the server ended a turn; an open set that grows over time.
    pub enum TurnCompleteReason {
        /// Not given.
        Unspecified = "TURN_COMPLETE_REASON_UNSPECIFIED",
        /// The model produced a function call that could not be parsed.
        MalformedFunctionCall = "MALFORMED_FUNCTION_CALL",
        /// The response was rejected.
        ResponseRejected = "RESPONSE_REJECTED",
        /// The model needs more input to continue.
        NeedMoreInput = "NEED_MORE_INPUT",
        /// The input was blocked as prohibited content.
        ProhibitedInputContent = "PROHIBITED_INPUT_CONTENT",
    }
}

open_enum! {
    /// The language of an `executableCode` part.
    pub enum Language {
        /// Not given.
        Unspecified = "LANGUAGE_UNSPECIFIED",
        /// Python.
        Python = "PYTHON",
    }
}

open_enum! {
    /// How a code execution ended.
    pub enum Outcome {
        /// Not given.
        Unspecified = "OUTCOME_UNSPECIFIED",
        /// It ran to completion.
        Ok = "OUTCOME_OK",
        /// It failed; the output usually holds the error.
        Failed = "OUTCOME_FAILED",
        /// It ran past its time limit.
        DeadlineExceeded = "OUTCOME_DEADLINE_EXCEEDED",
    }
}

open_enum! {
    /// What the server's voice activity detection saw.
    pub enum VoiceActivityType {
        /// Not given.
        Unspecified = "TYPE_UNSPECIFIED",
        /// The user started speaking.
        ActivityStart = "ACTIVITY_START",
        /// The user stopped speaking.
        ActivityEnd = "ACTIVITY_END",
    }
}

open_enum! {
    /// A start-of-speech or end-of-speech signal from the server.
    pub enum VadSignalType {
        /// Not given.
        Unspecified = "VAD_SIGNAL_TYPE_UNSPECIFIED",
        /// Start of speech.
        StartOfSpeech = "VAD_SIGNAL_TYPE_SOS",
        /// End of speech.
        EndOfSpeech = "VAD_SIGNAL_TYPE_EOS",
    }
}

open_enum! {
    /// Whether a URL given to the URL-context tool was fetched.
    pub enum UrlRetrievalStatus {
        /// Not given.
        Unspecified = "URL_RETRIEVAL_STATUS_UNSPECIFIED",
        /// Fetched.
        Success = "URL_RETRIEVAL_STATUS_SUCCESS",
        /// Could not be fetched.
        Error = "URL_RETRIEVAL_STATUS_ERROR",
    }
}
