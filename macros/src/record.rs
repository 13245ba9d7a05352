//! `livesim::record!`'s expansion: a trace entry written piece by piece.
//!
//! A simulated run records hundreds of entries, and `format_args!` costs
//! about 300 instructions an entry in the formatting machinery (padding,
//! the `Display` of an integer through a `Formatter`). Most entries are a
//! few literal words and a plain `{name}` or `{}`: for those this writes
//! the literal parts with `push_str` and each value through the cheapest
//! way its type has (`itoa` for an integer, `push_str` for text, `Display`
//! for anything else), chosen at compile time. The text is the same bytes
//! `format!` would make.
//!
//! Anything else (a format spec such as `{:?}` or `{x:>4}`, a named
//! argument, a format string that is not a literal) expands to the plain
//! `format_args!` path, which also gives `format_args!`'s own error for a
//! malformed format string.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, LitStr, Token};

/// One piece of the entry: literal text, or the value of an argument.
enum Piece {
    Text(String),
    /// The `n`-th explicit argument.
    Positional(usize),
    /// A variable named in the format string (`{turn}`).
    Captured(String),
}

/// `$crate ; "format", args…` (the crate path comes first so the
/// expansion names livesim as the caller's code reaches it).
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let mut tokens = input.into_iter();
    let krate: TokenStream = tokens
        .by_ref()
        .take_while(|t| !matches!(t, TokenTree::Punct(p) if p.as_char() == ';'))
        .collect();
    let rest: TokenStream = tokens.collect();
    let plain = quote! { #krate::executor::record_fmt(::std::format_args!(#rest)) };
    let Ok(call) = Parser::parse2(Call::parse, rest) else {
        return plain;
    };
    let Some(pieces) = pieces(&call.format.value(), call.args.len()) else {
        return plain;
    };
    let bindings: Vec<Ident> = (0..call.args.len())
        .map(|n| format_ident!("__livesim_arg{}", n, span = Span::mixed_site()))
        .collect();
    let out = Ident::new("__livesim_out", Span::mixed_site());
    let writes = pieces.iter().map(|piece| match piece {
        Piece::Text(text) => quote! { #out.push_str(#text); },
        Piece::Positional(n) => {
            let arg = &bindings[*n];
            quote! { (&#krate::executor::record_args::Arg(#arg)).write_trace(#out); }
        }
        Piece::Captured(name) => {
            // The format string's span: the variable resolves where the
            // caller wrote it, as with `format_args!`.
            let name = Ident::new(name, call.format.span());
            quote! { (&#krate::executor::record_args::Arg(&#name)).write_trace(#out); }
        }
    });
    let args = call.args.iter();
    quote! {
        match (#(&(#args),)*) {
            (#(#bindings,)*) => #krate::executor::record_written(
                |#out: &mut ::std::string::String| {
                    #[allow(unused_imports)]
                    use #krate::executor::record_args::{ViaDisplay as _, ViaPlain as _};
                    #(#writes)*
                },
            ),
        }
    }
}

/// A format string and its explicit arguments.
struct Call {
    format: LitStr,
    args: Vec<Expr>,
}

impl Parse for Call {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let format: LitStr = input.parse()?;
        let mut args = Vec::new();
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
            for arg in Punctuated::<Expr, Token![,]>::parse_terminated(input)? {
                // `name = value` is `format_args!`'s to handle.
                if matches!(arg, Expr::Assign(_)) {
                    return Err(input.error("a named argument"));
                }
                args.push(arg);
            }
        }
        Ok(Call { format, args })
    }
}

/// The pieces of `format` with `args` explicit arguments, or `None` when
/// the plain path must take it (a format spec, a malformed string, an
/// argument left unused).
fn pieces(format: &str, args: usize) -> Option<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut used = vec![false; args];
    let mut next = 0;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                text.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                text.push('}');
            }
            '}' => return None,
            '{' => {
                let mut inside = String::new();
                loop {
                    match chars.next()? {
                        '}' => break,
                        c => inside.push(c),
                    }
                }
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                let piece = if inside.is_empty() {
                    next += 1;
                    Piece::Positional(next - 1)
                } else if inside.bytes().all(|b| b.is_ascii_digit()) {
                    Piece::Positional(inside.parse().ok()?)
                } else if is_identifier(&inside) && syn::parse_str::<Ident>(&inside).is_ok() {
                    Piece::Captured(inside)
                } else {
                    return None;
                };
                if let Piece::Positional(n) = piece {
                    *used.get_mut(n)? = true;
                }
                pieces.push(piece);
            }
            c => text.push(c),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    used.iter().all(|u| *u).then_some(pieces)
}

/// A plain identifier (`turn`, `_n`): what `format_args!` captures.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
        && name != "_"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(format: &str, args: usize) -> Option<String> {
        pieces(format, args).map(|pieces| {
            pieces
                .iter()
                .map(|p| match p {
                    Piece::Text(t) => format!("[{t}]"),
                    Piece::Positional(n) => format!("#{n}"),
                    Piece::Captured(name) => format!("${name}"),
                })
                .collect()
        })
    }

    #[test]
    fn plain_placeholders_become_pieces() {
        assert_eq!(
            shape("turn {turn} complete", 0).unwrap(),
            "[turn ]$turn[ complete]"
        );
        assert_eq!(shape("{} of {}", 2).unwrap(), "#0[ of ]#1");
        assert_eq!(shape("{1}{0}{1}", 2).unwrap(), "#1#0#1");
        assert_eq!(shape("{{literal}} {x}", 0).unwrap(), "[{literal} ]$x");
        assert_eq!(shape("", 0).unwrap(), "");
    }

    #[test]
    fn anything_else_takes_the_plain_path() {
        for (format, args) in [
            ("{:?}", 1),
            ("{x:>4}", 0),
            ("{} and {}", 1),
            ("{}", 2),
            ("{2}", 1),
            ("unclosed {", 0),
            ("stray }", 0),
            ("{_}", 0),
            ("{r#type}", 0),
        ] {
            assert!(shape(format, args).is_none(), "{format:?} with {args}");
        }
    }
}
