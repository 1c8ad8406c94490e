//! The formats of values a payment provider issues: signing secrets, API
//! keys, app credentials, webhook ids, promotion codes and their ids,
//! coupon ids. Each is a type whose lengths, characters and description are
//! written once: a body's field names it as its `value_type`, and `judge`
//! checks a value where the body is read. What depends on the provider or
//! the mode (which of the prefixes) stays with the rule that knows them.

use serde_json::{json, Value};

use crate::field::check_len;
use crate::issue::Issue;
use crate::schema::Judged;

/// The characters a format allows.
#[derive(Debug, Clone, Copy)]
enum Chars {
    /// Printable ASCII without spaces (`!` to `~`).
    Printable,
    /// ASCII letters and digits.
    Alphanumeric,
    /// One of the prefixes, then ASCII letters and digits.
    Prefixed(&'static [&'static str]),
}

impl Chars {
    /// Whether `v` holds only these characters.
    fn fit(self, v: &str) -> bool {
        let alphanumeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric());
        match self {
            Chars::Printable => v.bytes().all(|b| (b'!'..=b'~').contains(&b)),
            Chars::Alphanumeric => alphanumeric(v),
            Chars::Prefixed(prefixes) => prefixes
                .iter()
                .any(|p| v.strip_prefix(p).is_some_and(alphanumeric)),
        }
    }

    /// The regular expression that says the same.
    fn pattern(self) -> String {
        match self {
            Chars::Printable => "^[!-~]+$".into(),
            Chars::Alphanumeric => "^[A-Za-z0-9]+$".into(),
            Chars::Prefixed(prefixes) => format!("^({})[A-Za-z0-9]+$", prefixes.join("|")),
        }
    }

    /// The same in words.
    fn words(self) -> String {
        match self {
            Chars::Printable => "printable ASCII without spaces".into(),
            Chars::Alphanumeric => "letters and digits".into(),
            Chars::Prefixed(prefixes) => {
                let quoted: Vec<String> = prefixes.iter().map(|p| format!("`{p}`")).collect();
                match quoted.split_last() {
                    Some((last, [])) => format!("letters and digits after {last}"),
                    Some((last, rest)) => {
                        format!("letters and digits after {} or {last}", rest.join(", "))
                    }
                    None => "letters and digits".into(),
                }
            }
        }
    }
}

/// A provider's format: its lengths in characters, its characters, what it
/// is and an example.
struct Format {
    min: usize,
    max: usize,
    chars: Chars,
    about: &'static str,
    example: Option<&'static str>,
}

impl Format {
    /// `value` against the format: its length first, then its characters.
    fn judge(&self, path: &str, value: String) -> Judged<String> {
        let issue = check_len(path, &value, self.min, self.max)
            .err()
            .or_else(|| {
                (!self.chars.fit(&value)).then(|| {
                    Issue::new(
                        &[path],
                        "invalid_string",
                        format!("{path} must be {}", self.chars.words()),
                    )
                })
            });
        Judged { value, issue }
    }

    /// The format's description.
    fn schema(&self) -> Value {
        let mut schema = json!({
            "type": "string",
            "description": format!("{}: {}-{} characters, {}.", self.about, self.min, self.max, self.chars.words()),
            "minLength": self.min,
            "maxLength": self.max,
            "pattern": self.chars.pattern(),
        });
        if let Some(example) = self.example {
            schema["example"] = json!(example);
        }
        schema
    }
}

/// Defines a provider's format: the type, its `judge` and its description.
macro_rules! provider_format {
    ($(#[$doc:meta])* $name:ident = $format:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl $name {
            const FORMAT: Format = $format;

            /// `value` against the format; the issue names `path`.
            pub fn judge(path: &str, value: String) -> Judged<String> {
                Self::FORMAT.judge(path, value)
            }
        }

        crate::described!($name, stringify!($name), $name::FORMAT.schema());
    };
}

/// The id prefix of a Stripe promotion code.
pub const STRIPE_PROMOTION_CODE_PREFIX: &str = "promo_";
/// The id prefix of a Paddle discount.
pub const PADDLE_DISCOUNT_PREFIX: &str = "dsc_";
/// The prefixes of a Stripe key: secret or restricted, live or test (all
/// of one length).
const STRIPE_KEY_PREFIXES: &[&str] = &["sk_live_", "sk_test_", "rk_live_", "rk_test_"];

provider_format! {
    /// The secret a provider shows for a webhook endpoint.
    SigningSecret = Format {
        min: 8,
        max: 500,
        chars: Chars::Printable,
        about: "The secret a provider shows for a webhook endpoint (Stripe `whsec_…`, Paddle `pdl_ntfset_…`)",
        example: Some("whsec_5f1a2b3c4d5e6f708192a3b4c5d6e7f8"),
    }
}

provider_format! {
    /// A Stripe secret or restricted key (`sk_…`, `rk_…`), live or test.
    StripeKey = Format {
        // A prefix and at least one character.
        min: STRIPE_KEY_PREFIXES[0].len() + 1,
        max: 255,
        chars: Chars::Prefixed(STRIPE_KEY_PREFIXES),
        about: "A Stripe secret or restricted key, of the integration's mode",
        example: Some("rk_test_51Habc0123456789"),
    }
}

provider_format! {
    /// An id or secret a provider issued: a PayPal REST app's client id
    /// or secret, a Stripe coupon's id.
    ProviderToken = Format {
        min: 1,
        max: 255,
        chars: Chars::Printable,
        about: "An id or secret the provider issued",
        example: None,
    }
}

provider_format! {
    /// A name made of letters and digits: a PayPal webhook's id, a
    /// promotion code as customers type it (Stripe's rule).
    ProviderCode = Format {
        min: 1,
        max: 50,
        chars: Chars::Alphanumeric,
        about: "A code or id the provider takes in letters and digits",
        example: None,
    }
}

provider_format! {
    /// A promotion code's id at its provider: a Stripe promotion code
    /// (`promo_…`) or a Paddle discount (`dsc_…`).
    DiscountId = Format {
        // The shorter prefix and at least one character.
        min: PADDLE_DISCOUNT_PREFIX.len() + 1,
        max: 255,
        chars: Chars::Prefixed(&[STRIPE_PROMOTION_CODE_PREFIX, PADDLE_DISCOUNT_PREFIX]),
        about: "A Stripe promotion code's id (`promo_…`) or a Paddle discount's (`dsc_…`)",
        example: Some("promo_1Pgc79B7WZ01zgkWNy4mn5NX"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_judges_its_length_then_its_characters() {
        let issue = |j: Judged<String>| j.issue.map(|i| i.code);
        type Judge = fn(&str, String) -> Judged<String>;
        let cases: [(Judge, &str, Option<&str>); 12] = [
            (SigningSecret::judge, "whsec_abcdefgh", None),
            (SigningSecret::judge, "short", Some("too_small")),
            (
                SigningSecret::judge,
                "whsec_abc def",
                Some("invalid_string"),
            ),
            (StripeKey::judge, "rk_test_51Habc", None),
            (StripeKey::judge, "pk_test_51Habc", Some("invalid_string")),
            (StripeKey::judge, "sk_live_", Some("too_small")),
            (ProviderToken::judge, "AbC-._~!", None),
            (ProviderToken::judge, "", Some("too_small")),
            (ProviderCode::judge, "ANNA20", None),
            (ProviderCode::judge, "ANNA-20", Some("invalid_string")),
            (DiscountId::judge, "dsc_01h", None),
            (DiscountId::judge, "promo_", Some("invalid_string")),
        ];
        for (judge, value, want) in cases {
            let got = issue(judge("f", value.to_string()));
            assert_eq!(got.as_deref(), want, "{value}");
        }
    }

    #[test]
    fn the_pattern_says_what_the_check_does() {
        let schema = serde_json::to_value(<StripeKey as utoipa::PartialSchema>::schema()).unwrap();
        assert_eq!(
            schema["pattern"],
            "^(sk_live_|sk_test_|rk_live_|rk_test_)[A-Za-z0-9]+$"
        );
        assert_eq!(schema["maxLength"], 255);
        // The shortest key is one of the prefixes and a character.
        assert_eq!(schema["minLength"], 9);
        assert!(STRIPE_KEY_PREFIXES.iter().all(|p| p.len() == 8));
        let discount =
            serde_json::to_value(<DiscountId as utoipa::PartialSchema>::schema()).unwrap();
        assert_eq!(discount["minLength"], 5);
        assert_eq!(discount["pattern"], "^(promo_|dsc_)[A-Za-z0-9]+$");
    }
}
