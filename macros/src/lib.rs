//! `#[livesim::test]`: an async test run under the livesim seed runner.
//!
//! It has the shape of `#[tokio::test]`: write an `async fn`, get a `#[test]`.
//! The body runs once per seed, each time in a fresh simulated runtime, and
//! a failure is reported with its seed and the command that replays it, and
//! its timeline page is written (`livesim::timeline::write_test_timeline`).
//! A failing seed is kept in the test's regressions file and runs first
//! from then on (`livesim::executor::regressions_file`).

mod record;

use proc_macro::TokenStream;
use quote::quote;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, ItemFn, Lit, Meta, Token};

/// Marks an async function as a seeded livesim test. See the `livesim`
/// crate's documentation of `livesim::test`.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    match expand(args.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// `livesim::record!`'s expansion (called by that macro with the crate's
/// path first: `$crate; "format", args…`). Not for direct use.
#[doc(hidden)]
#[proc_macro]
pub fn record_pieces(input: TokenStream) -> TokenStream {
    record::expand(input.into()).into()
}

fn expand(
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> syn::Result<proc_macro2::TokenStream> {
    let function: ItemFn = syn::parse2(item)?;
    if function.sig.asyncness.is_none() {
        return Err(syn::Error::new_spanned(
            function.sig.fn_token,
            "#[livesim::test] goes on an `async fn`",
        ));
    }
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args)?;
    let mut configure = Vec::new();
    for meta in metas {
        let Meta::NameValue(nv) = &meta else {
            return Err(syn::Error::new_spanned(
                meta,
                "expected `seeds = N`, `seed = 0x…` or `time_limit_secs = N`",
            ));
        };
        let Expr::Lit(ExprLit {
            lit: Lit::Int(value),
            ..
        }) = &nv.value
        else {
            return Err(syn::Error::new_spanned(&nv.value, "expected an integer"));
        };
        let value: u64 = value.base10_parse()?;
        let name = nv
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        configure.push(match name.as_str() {
            "seeds" => quote! { .seeds(#value) },
            "seed" => quote! { .seed(::livesim::Seed::new(#value)) },
            "time_limit_secs" => {
                quote! { .time_limit(::std::time::Duration::from_secs(#value)) }
            }
            _ => {
                return Err(syn::Error::new_spanned(
                    &nv.path,
                    "unknown argument: expected `seeds`, `seed` or `time_limit_secs`",
                ));
            }
        });
    }

    let attrs = &function.attrs;
    // An ignored test's replay line must ask libtest to run it.
    let ignored = attrs
        .iter()
        .any(|a| a.path().is_ident("ignore"))
        .then(|| quote! { .ignored() });
    let vis = &function.vis;
    let name = &function.sig.ident;
    let output = &function.sig.output;
    let body = &function.block;
    let inputs = &function.sig.inputs;
    let call = match inputs.len() {
        0 => quote! { |_seed: ::livesim::Seed| __livesim_body() },
        1 => quote! { |seed: ::livesim::Seed| __livesim_body(seed) },
        _ => {
            return Err(syn::Error::new_spanned(
                inputs,
                "a livesim test takes no argument or one `Seed`",
            ));
        }
    };
    Ok(quote! {
        #[::core::prelude::v1::test]
        #(#attrs)*
        #vis fn #name() {
            async fn __livesim_body(#inputs) #output #body
            ::livesim::executor::Runner::new(::livesim::test_id!() #ignored)
                .regressions_beside(env!("CARGO_MANIFEST_DIR"), file!())
                #(#configure)*
                .on_failure(::livesim::timeline::write_test_timeline)
                .run(#call);
        }
    })
}
