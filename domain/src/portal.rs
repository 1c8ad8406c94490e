//! The affiliate portal (contract section 13): its referral links and the
//! invoices an affiliate uploads; its views and its body are `wire::portal`.

use crate::error::Error;

/// A landing URL with the affiliate's `ref` parameter (before any fragment).
pub fn referral_link(landing: &str, code: &str) -> String {
    let (base, fragment) = match landing.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (landing, None),
    };
    let sep = if base.contains('?') { '&' } else { '?' };
    let code: String = url_encode(code);
    match fragment {
        Some(f) => format!("{base}{sep}ref={code}#{f}"),
        None => format!("{base}{sep}ref={code}"),
    }
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The content type an invoice's first bytes prove (PDF, PNG or JPEG),
/// whatever the request claimed; 400 for anything else or an empty or
/// oversized file.
pub fn invoice_type(bytes: &[u8], max: u64) -> Result<&'static str, Error> {
    if bytes.is_empty() || bytes.len() as u64 > max {
        return Err(Error::InvalidRequest(format!(
            "an invoice is 1 byte to {max} bytes"
        )));
    }
    if bytes.starts_with(b"%PDF-") {
        Ok("application/pdf")
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Ok("image/png")
    } else if bytes.starts_with(b"\xFF\xD8\xFF") {
        Ok("image/jpeg")
    } else {
        Err(Error::InvalidRequest(
            "an invoice must be a PDF, PNG or JPEG file".into(),
        ))
    }
}

/// The stored name of an affiliate's invoice: the name it sent, kept to
/// letters, digits, `.`, `-` and `_` (at most 100 in all), with the
/// extension of what the bytes are (`pdf`, `png`, `jpg`) in place of its own,
/// so a file the merchant saves opens as what it is; `invoice.<ext>` when
/// nothing of the name is left.
pub fn invoice_file_name(sent: Option<&str>, content_type: &str) -> String {
    let ext = match content_type {
        "application/pdf" => "pdf",
        "image/png" => "png",
        _ => "jpg",
    };
    let kept: String = sent
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        .collect();
    let stem = kept
        .rsplit_once('.')
        .map_or(kept.as_str(), |(stem, _)| stem);
    let stem: String = stem
        .trim_matches('.')
        .chars()
        .take(100 - ext.len() - 1)
        .collect();
    match stem.is_empty() {
        true => format!("invoice.{ext}"),
        false => format!("{stem}.{ext}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invoices_name_keeps_safe_characters_and_takes_its_bytes_extension() {
        let pdf = "application/pdf";
        let cases = [
            (Some("March/invoice.pdf"), pdf, "Marchinvoice.pdf"),
            (Some("a.html"), pdf, "a.pdf"),
            (Some("photo.JPEG"), "image/jpeg", "photo.jpg"),
            (Some("scan"), "image/png", "scan.png"),
            (Some("../../etc/passwd"), pdf, "invoice.pdf"),
            (Some("é\"; filename=evil.exe"), pdf, "filenameevil.pdf"),
            (None, "image/png", "invoice.png"),
        ];
        for (sent, kind, want) in cases {
            assert_eq!(invoice_file_name(sent, kind), want, "{sent:?}");
        }
        let long = invoice_file_name(Some(&"x".repeat(300)), pdf);
        assert_eq!((long.len(), long.ends_with(".pdf")), (100, true));
    }

    #[test]
    fn referral_links_add_the_code_as_ref() {
        let cases = [
            (
                "https://shop.example.com",
                "ANN10",
                "https://shop.example.com?ref=ANN10",
            ),
            (
                "https://shop.example.com/p?x=1",
                "ANN10",
                "https://shop.example.com/p?x=1&ref=ANN10",
            ),
            (
                "https://shop.example.com/#top",
                "A B",
                "https://shop.example.com/?ref=A%20B#top",
            ),
        ];
        for (landing, code, want) in cases {
            assert_eq!(referral_link(landing, code), want);
        }
    }

    #[test]
    fn invoices_are_known_by_their_first_bytes() {
        assert_eq!(
            invoice_type(b"%PDF-1.4 ...", 100).unwrap(),
            "application/pdf"
        );
        assert_eq!(
            invoice_type(b"\x89PNG\r\n\x1a\n....", 100).unwrap(),
            "image/png"
        );
        assert_eq!(
            invoice_type(b"\xFF\xD8\xFF\xE0..", 100).unwrap(),
            "image/jpeg"
        );
        for bad in [&b""[..], b"GIF89a", b"<html>", &[b'%'; 101][..]] {
            assert!(invoice_type(bad, 100).is_err(), "{bad:?}");
        }
    }
}
