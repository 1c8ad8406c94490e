//! `wire_enum!`: a fieldless enum whose wire names are written once.
//!
//! ```ignore
//! wire_enum! {
//!     /// Where an application stands.
//!     pub enum ApplicationStatus {
//!         Pending = "PENDING",
//!         Accepted = "ACCEPTED",
//!     }
//! }
//! ```
//!
//! generates the enum (`Debug, Clone, Copy, PartialEq, Eq`, serde with each
//! variant renamed to its wire name; more derives may be added above `pub`),
//! `ALL`, `NAMES`, `as_str`, `parse`, `Display` and [`WireEnum`]. `parse`
//! matches the exact case; write `pub enum Name [ignore_case] { .. }` for a
//! case-insensitive one.

/// What every `wire_enum!` enum answers, for code generic over them (a
/// query parameter naming a variant).
pub trait WireEnum: Sized + Copy + 'static {
    /// Every wire name, in declaration order.
    fn names() -> &'static [&'static str];
    /// Parses a wire name, as the enum's own `parse` does.
    fn from_wire(s: &str) -> Option<Self>;
}

/// Declares an enum with its wire names once; see the module docs.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident $([$case:ident])? {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:tt ),+ $(,)?
        }
    ) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, ::serde::Serialize, ::serde::Deserialize, ::utoipa::ToSchema)]
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [$name; [$($wire),+].len()] = [$($name::$variant),+];
            /// Every wire name, in declaration order (as filters accept them).
            pub const NAMES: [&'static str; [$($wire),+].len()] = [$($wire),+];

            /// The wire and storage name.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)+
                }
            }

            /// Parses a wire name.
            pub fn parse(s: &str) -> Option<$name> {
                Self::ALL
                    .into_iter()
                    .find(|v| $crate::enums::wire_enum!(@eq $($case)?; v.as_str(), s))
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::enums::WireEnum for $name {
            fn names() -> &'static [&'static str] {
                &$name::NAMES
            }

            fn from_wire(s: &str) -> Option<Self> {
                $name::parse(s)
            }
        }
    };
    (@eq ; $a:expr, $b:expr) => {
        $a == $b
    };
    (@eq ignore_case; $a:expr, $b:expr) => {
        $a.eq_ignore_ascii_case($b)
    };
}

pub(crate) use wire_enum;

#[cfg(test)]
mod tests {
    wire_enum! {
        /// Exact-case test enum.
        #[derive(Hash)]
        pub enum Colour {
            /// The first.
            Red = "RED",
            DarkBlue = "DARK_BLUE",
        }
    }

    wire_enum! {
        /// Any-case test enum.
        pub enum Size [ignore_case] {
            Small = "s",
            Large = "l",
        }
    }

    #[test]
    fn names_parse_print_and_serialize_alike() {
        assert_eq!(Colour::NAMES, ["RED", "DARK_BLUE"]);
        assert_eq!(Colour::ALL, [Colour::Red, Colour::DarkBlue]);
        for c in Colour::ALL {
            assert_eq!(Colour::parse(c.as_str()), Some(c));
            assert_eq!(c.to_string(), c.as_str());
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        }
        assert_eq!(Colour::parse("dark_blue"), None);
        assert_eq!(Size::parse("L"), Some(Size::Large));
        assert_eq!(Size::NAMES, ["s", "l"]);
        // Generic code reads the same names and parser.
        use super::WireEnum;
        assert_eq!(Colour::names(), Colour::NAMES);
        assert_eq!(Colour::from_wire("DARK_BLUE"), Some(Colour::DarkBlue));
        assert_eq!(Size::from_wire("S"), Some(Size::Small));
        // Serde's refusal reads as it did with `rename_all`.
        #[derive(Debug, serde::Deserialize)]
        #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
        enum Before {
            Red,
            DarkBlue,
        }
        for json in ["\"GREEN\"", "\"red\"", "1"] {
            let new = serde_json::from_str::<Colour>(json).unwrap_err();
            let old = serde_json::from_str::<Before>(json).unwrap_err();
            assert_eq!(new.to_string(), old.to_string());
        }
        assert!(matches!(serde_json::from_str("\"RED\""), Ok(Before::Red)));
    }
}
