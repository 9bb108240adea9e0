//! `--set FIELD=VALUE`: assignments applied to the parsed document before validation.
//!
//! `FIELD` is a dotted path: table keys, and for arrays of tables (`links`, `paths`, `flows`)
//! either the element's `name` or its 0-based index (`links.bottleneck.rate`, `flows.0.start`),
//! also written in brackets as error messages name fields (`flows[0].start`).
//! `VALUE` is a TOML value (`20`, `"20Mbps"`, `[1, 2]`, `true`); text that is not one is taken
//! as a string, so `rate=20Mbps` needs no quotes. An assigned value carries a span past the end
//! of the file's text, so an error in it names the override instead of a line of the file.
//!
//! `~FIELD` removes what `FIELD` names (Hydra's deletion syntax): a key of a table, so that it
//! takes its default, or a whole element of an array of tables (`~links.access`). Removing
//! what is not in the document is an error naming it, as Hydra's is: a typo in a deletion
//! must not pass silently, since the merged document's validation cannot see it.

use std::borrow::Cow;
use std::ops::Range;

use toml::de::{DeArray, DeTable, DeValue};
use toml::Spanned;

use super::check::Ctx;
use super::ConfigError;

/// Give `v` and everything inside it the span `span`.
fn respan<'a>(v: Spanned<DeValue<'a>>, span: &Range<usize>) -> Spanned<DeValue<'a>> {
    let inner = match v.into_inner() {
        DeValue::Array(items) => {
            DeValue::Array(items.into_iter().map(|x| respan(x, span)).collect())
        }
        DeValue::Table(t) => DeValue::Table(
            t.into_iter()
                .map(|(k, x)| (Spanned::new(span.clone(), k.into_inner()), respan(x, span)))
                .collect(),
        ),
        other => other,
    };
    Spanned::new(span.clone(), inner)
}

pub(super) fn apply<'a>(
    ctx: &Ctx<'a>,
    root: &mut Spanned<DeTable<'a>>,
    overrides: &'a [String],
) -> Result<(), ConfigError> {
    for (k, o) in overrides.iter().enumerate() {
        let span = Ctx::override_span(ctx.text.len(), k);
        let fail = |field: &str, message: String, allowed: &str| {
            ctx.err(Some(span.clone()), field, message, Some(allowed))
        };
        if let Some(path) = o.trim_start().strip_prefix('~') {
            let keys = field_keys(path.trim(), &fail)?;
            unset(root.get_mut(), &keys, String::new(), &fail)?;
            continue;
        }
        let Some((path, value)) = o.split_once('=') else {
            return Err(fail(
                "",
                "an override is FIELD=VALUE".into(),
                "e.g. links.bottleneck.rate=20Mbps, duration=30s, flows.0.algorithm=lia",
            ));
        };
        let path = path.trim();
        let value = value.trim();
        let parsed = match DeValue::parse(value) {
            Ok(v) => respan(v, &span),
            Err(_) => Spanned::new(span.clone(), DeValue::String(Cow::Borrowed(value))),
        };
        let keys = field_keys(path, &fail)?;
        set(root.get_mut(), &keys, String::new(), parsed, &span, &fail)?;
    }
    Ok(())
}

type Fail<'f> = dyn Fn(&str, String, &str) -> ConfigError + 'f;

/// The keys of a dotted field path (none empty; a deletion carries no value).
fn field_keys<'p>(path: &'p str, fail: &Fail) -> Result<Vec<&'p str>, ConfigError> {
    if let Some((field, _)) = path.split_once('=') {
        return Err(fail(
            field.trim(),
            format!("a deletion takes no value: ~{path}"),
            "~FIELD, e.g. ~links.access, ~paths.p1.ack_delay",
        ));
    }
    // `flows[0].mss`, as error messages name fields, is `flows.0.mss`.
    let mut keys: Vec<&str> = Vec::new();
    for part in path.split('.').map(str::trim) {
        let (mut head, mut rest) = part.split_once('[').unwrap_or((part, ""));
        keys.push(head.trim());
        while !rest.is_empty() {
            let Some((sel, after)) = rest.split_once(']') else {
                keys.push("");
                break;
            };
            keys.push(sel.trim());
            (head, rest) = after.split_once('[').unwrap_or((after, ""));
            if !head.trim().is_empty() {
                keys.push("");
            }
        }
    }
    if keys.iter().any(|s| s.is_empty()) {
        return Err(fail(
            path,
            format!("{path:?} is not a dotted field path"),
            "keys separated by dots; array elements by name or 0-based index (flows.0 or flows[0])",
        ));
    }
    Ok(keys)
}

/// `at` extended by `key` (the path so far, for messages).
fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

/// The element of an array of tables that `sel` (a `name` or a 0-based index) picks.
fn pick(
    items: &[Spanned<DeValue<'_>>],
    sel: &str,
    at: &str,
    fail: &Fail,
) -> Result<usize, ConfigError> {
    let names: Vec<&str> = items
        .iter()
        .filter_map(|x| x.get_ref().get("name").and_then(|n| n.get_ref().as_str()))
        .collect();
    let pos = match sel.parse::<usize>() {
        Ok(n) => (n < items.len()).then_some(n),
        Err(_) => items
            .iter()
            .position(|x| x.get_ref().get("name").and_then(|n| n.get_ref().as_str()) == Some(sel)),
    };
    pos.ok_or_else(|| {
        let indices = match items.len() {
            0 => "no element to pick (the array is empty)".to_string(),
            1 => "the index 0".to_string(),
            n => format!("an index from 0 to {}", n - 1),
        };
        let allowed = format!("{indices} or a name: {}", names.join(", "));
        fail(at, format!("no element {sel:?} in {at}"), &allowed)
    })
}

/// Remove what `keys` names under `table`: a key, or an element of an array of tables.
fn unset(
    table: &mut DeTable<'_>,
    keys: &[&str],
    at: String,
    fail: &Fail,
) -> Result<(), ConfigError> {
    let key = keys[0];
    let here = join(&at, key);
    let missing = |table: &DeTable<'_>| {
        let present: Vec<&str> = table.keys().map(|k| k.get_ref().as_ref()).collect();
        let allowed = format!("a field the scenario writes: {}", present.join(", "));
        let within = if at.is_empty() { "the scenario" } else { &at };
        fail(&here, format!("no {key:?} in {within} to remove"), &allowed)
    };
    if keys.len() == 1 {
        return match table.remove(key) {
            Some(_) => Ok(()),
            None => Err(missing(table)),
        };
    }
    let Some(v) = table.get_mut(key) else {
        return Err(missing(table));
    };
    match v.get_mut() {
        DeValue::Table(t) => unset(t, &keys[1..], here, fail),
        DeValue::Array(items) => {
            let pos = pick(items, keys[1], &here, fail)?;
            if keys.len() == 2 {
                // DeArray has no remove: rebuild it without the element.
                let kept = std::mem::replace(items, DeArray::new())
                    .into_iter()
                    .enumerate()
                    .filter(|(j, _)| *j != pos)
                    .map(|(_, x)| x);
                *items = kept.collect();
                return Ok(());
            }
            let here = format!("{here}[{pos}]");
            let items: &mut [Spanned<DeValue<'_>>] = items;
            match items[pos].get_mut() {
                DeValue::Table(t) => unset(t, &keys[2..], here, fail),
                _ => Err(fail(&here, format!("{here} is not a table"), "a table")),
            }
        }
        _ => Err(fail(
            &here,
            format!("{here} is a value, not a table"),
            "a path to a field",
        )),
    }
}

/// Assign `value` at `keys` under `table` (`at`: the path so far, for messages).
fn set<'a>(
    table: &mut DeTable<'a>,
    keys: &[&str],
    at: String,
    value: Spanned<DeValue<'a>>,
    span: &Range<usize>,
    fail: &Fail,
) -> Result<(), ConfigError> {
    let key = keys[0];
    let at = join(&at, key);
    let new_key = || Spanned::new(span.clone(), Cow::Owned(key.to_string()));
    if keys.len() == 1 {
        table.insert(new_key(), value);
        return Ok(());
    }
    if !table.contains_key(key) {
        table.insert(
            new_key(),
            Spanned::new(span.clone(), DeValue::Table(DeTable::new())),
        );
    }
    match table.get_mut(key).expect("inserted above").get_mut() {
        DeValue::Table(t) => set(t, &keys[1..], at, value, span, fail),
        DeValue::Array(items) => {
            // An array of tables: the next key picks the element by name or index.
            let pos = pick(items, keys[1], &at, fail)?;
            let items: &mut [Spanned<DeValue<'a>>] = items;
            let at = format!("{at}[{pos}]");
            if keys.len() == 2 {
                items[pos] = value;
                return Ok(());
            }
            match items[pos].get_mut() {
                DeValue::Table(t) => set(t, &keys[2..], at, value, span, fail),
                _ => Err(fail(&at, format!("{at} is not a table"), "a table")),
            }
        }
        _ => Err(fail(
            &at,
            format!("{at} is a value, not a table"),
            "a path to a field",
        )),
    }
}

/// Take top-level table `name` out of the document, as a plain TOML value.
pub(super) fn take_table(
    ctx: &Ctx,
    root: &mut Spanned<DeTable>,
    name: &str,
) -> Result<Option<toml::Value>, ConfigError> {
    let Some(v) = root.get_mut().remove(name) else {
        return Ok(None);
    };
    let span = v.span();
    match v.into_inner() {
        DeValue::Table(t) => {
            let de = toml::de::Deserializer::from(Spanned::new(span.clone(), t));
            let table: toml::Table = serde::Deserialize::deserialize(de)
                .map_err(|e| ctx.err(Some(span.clone()), name, e.message().to_string(), None))?;
            Ok(Some(toml::Value::Table(table)))
        }
        _ => Err(ctx.err(Some(span), name, "must be a table", Some("[name] ..."))),
    }
}

/// The document as TOML text (after overrides, without the extension tables).
pub(super) fn render(ctx: &Ctx, root: &Spanned<DeTable>) -> Result<String, ConfigError> {
    let de = toml::de::Deserializer::from(root.clone());
    let table: toml::Table = serde_path_to_error::deserialize(de).map_err(|e| {
        // toml::Value holds i64: a seed above 2^63-1, valid in a file read as is, cannot be
        // rendered anew. Name the field rather than leave serde's bare "u64 value was too large".
        let field = e.path().to_string();
        let inner = e.into_inner();
        let (message, allowed) = if inner.message().contains("too large") {
            (
                "integer above 2^63-1 in a scenario rendered anew (after --set, or without its extension tables)".to_string(),
                Some("integers up to 2^63-1 there (the file itself, read as is, may hold up to 2^64-1)"),
            )
        } else {
            (inner.message().to_string(), None)
        };
        ctx.err(inner.span(), field.trim_start_matches('.'), message, allowed)
    })?;
    let body = toml::to_string(&table).map_err(|e| ctx.err(None, "", e.to_string(), None))?;
    // Say where the document came from: the results' scenario.toml is this text.
    let mut head = format!("# {}", ctx.origin.replace('\n', " "));
    for o in ctx.overrides {
        head.push_str(&format!(" --set {}", o.replace('\n', " ")));
    }
    Ok(format!("{head}\n{body}"))
}
