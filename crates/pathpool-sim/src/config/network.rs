//! `[[links]]` and `[[paths]]`.

use std::collections::HashMap;

use toml::Spanned;

use super::check::{buffer, probability, rate, Ctx, DEFAULT_BUFFER_PACKETS, MAX_DELAY, MAX_LINKS};
use super::raw::{Quantity, RawLink, RawPath};
use super::schema::allowed as a;
use super::{AckRoute, ConfigError, FlowSpec, LinkSpec, PathSpec};
use crate::net::link::{Buffer, GilbertElliott, Reorder};
use crate::net::packet::HEADER_BYTES;
use crate::time::Nanos;

/// Names of one section, for lookups by name and "allowed" lists, checked unique in linear time.
pub(super) struct Names {
    index: HashMap<String, usize>,
    list: String,
}

impl Names {
    pub fn new() -> Names {
        Names {
            index: HashMap::new(),
            list: String::new(),
        }
    }

    /// Add `name` (from field `field`, of kind `what`), refusing a duplicate.
    pub fn add(
        &mut self,
        ctx: &Ctx,
        name: &str,
        span: &Spanned<String>,
        field: &str,
        what: &str,
    ) -> Result<(), ConfigError> {
        let next = self.index.len();
        if self.index.insert(name.to_string(), next).is_some() {
            return Err(ctx.err(
                Some(span.span()),
                field,
                format!("duplicate {what} name {name:?}"),
                Some(&format!("a name unique among {what}s")),
            ));
        }
        if !self.list.is_empty() {
            self.list.push_str(", ");
        }
        self.list.push_str(name);
        Ok(())
    }

    /// The index of the entry a reference names, or an error listing the names.
    pub fn find(
        &self,
        ctx: &Ctx,
        s: &Spanned<String>,
        field: String,
        what: &str,
    ) -> Result<usize, ConfigError> {
        self.index
            .get(s.get_ref().as_str())
            .copied()
            .ok_or_else(|| {
                ctx.err(
                    Some(s.span()),
                    field,
                    format!("no {what} named {:?}", s.get_ref()),
                    Some(&self.list),
                )
            })
    }

    pub fn list(&self) -> &str {
        &self.list
    }
}

pub(super) fn links(ctx: &Ctx, raw: &[RawLink]) -> Result<(Vec<LinkSpec>, Names), ConfigError> {
    if raw.len() > MAX_LINKS {
        return Err(ctx.err(
            None,
            "links",
            format!("{} links", raw.len()),
            Some(&format!("at most {MAX_LINKS}")),
        ));
    }
    let mut names = Names::new();
    let mut out = Vec::with_capacity(raw.len());
    for (i, l) in raw.iter().enumerate() {
        let field = format!("links[{i}].name");
        let name = ctx.name(&l.name, &field)?;
        names.add(ctx, &name, &l.name, &field, "link")?;
        out.push(link(ctx, i, l, name)?);
    }
    Ok((out, names))
}

fn link(ctx: &Ctx, i: usize, l: &RawLink, name: String) -> Result<LinkSpec, ConfigError> {
    let f = |k: &str| format!("links[{i}].{k}");
    let rate_bps = ctx.q(&l.rate, &f("rate"), rate, a::LINK_RATE)?;
    let delay = match &l.delay {
        None => 0,
        Some(v) => ctx.time(v, &f("delay"), 0, MAX_DELAY, a::LINK_DELAY)?,
    };
    let buffer = match &l.buffer {
        None => Buffer::Packets(DEFAULT_BUFFER_PACKETS),
        Some(v) => ctx.q(v, &f("buffer"), buffer, a::BUFFER)?,
    };
    let loss = match &l.loss {
        None => 0.0,
        Some(v) => ctx.q(v, &f("loss"), probability, a::LOSS)?,
    };
    let gilbert = match &l.gilbert {
        None => None,
        Some(g) => {
            let g = g.get_ref();
            let pr = |v: &Spanned<Quantity>, k: &str| {
                ctx.q(v, &f(&format!("gilbert.{k}")), probability, a::GILBERT)
            };
            let opt = |v: &Option<Spanned<Quantity>>, k: &str, default: f64| {
                v.as_ref()
                    .map(|v| pr(v, k))
                    .transpose()
                    .map(|p| p.unwrap_or(default))
            };
            Some(GilbertElliott {
                p: pr(&g.p, "p")?,
                r: pr(&g.r, "r")?,
                loss_good: opt(&g.loss_good, "loss_good", 0.0)?,
                loss_bad: opt(&g.loss_bad, "loss_bad", 1.0)?,
            })
        }
    };
    let reorder = match &l.reorder {
        None => None,
        Some(r) => {
            let r = r.get_ref();
            let probability = ctx.q(
                &r.probability,
                &f("reorder.probability"),
                probability,
                a::REORDER_PROBABILITY,
            )?;
            let extra_delay = ctx.time(
                &r.extra_delay,
                &f("reorder.extra_delay"),
                1,
                MAX_DELAY,
                a::REORDER_DELAY,
            )?;
            Some(Reorder {
                probability,
                extra_delay,
            })
        }
    };
    Ok(LinkSpec {
        name,
        rate_bps,
        delay,
        buffer,
        loss,
        gilbert,
        reorder,
    })
}

pub(super) fn paths(
    ctx: &Ctx,
    raw: &[RawPath],
    links: &[LinkSpec],
    link_names: &Names,
) -> Result<(Vec<PathSpec>, Names), ConfigError> {
    let mut names = Names::new();
    let mut out = Vec::with_capacity(raw.len());
    for (i, p) in raw.iter().enumerate() {
        let field = format!("paths[{i}].name");
        let name = ctx.name(&p.name, &field)?;
        names.add(ctx, &name, &p.name, &field, "path")?;
        out.push(path(ctx, i, p, name, links, link_names)?);
    }
    Ok((out, names))
}

fn path(
    ctx: &Ctx,
    i: usize,
    p: &RawPath,
    name: String,
    links: &[LinkSpec],
    link_names: &Names,
) -> Result<PathSpec, ConfigError> {
    let f = |k: &str| format!("paths[{i}].{k}");
    let route = |list: &Spanned<Vec<Spanned<String>>>, key: &str| {
        if list.get_ref().is_empty() {
            return Err(ctx.err(
                Some(list.span()),
                f(key),
                if key == "links" {
                    "a path needs at least one link"
                } else {
                    "must list at least one link (or use ack_delay)"
                },
                Some(link_names.list()),
            ));
        }
        let mut idx = Vec::with_capacity(list.get_ref().len());
        for (j, s) in list.get_ref().iter().enumerate() {
            idx.push(link_names.find(ctx, s, format!("paths[{i}].{key}[{j}]"), "link")?);
        }
        Ok(idx)
    };
    let idx = route(&p.links, "links")?;
    let ack = match (&p.ack_links, &p.ack_delay) {
        (Some(_), Some(ad)) => {
            return Err(ctx.err(
                Some(ad.span()),
                f("ack_delay"),
                "give either ack_links or ack_delay, not both",
                None,
            ));
        }
        (Some(al), None) => AckRoute::Links(route(al, "ack_links")?),
        (None, Some(ad)) => {
            AckRoute::Delay(ctx.time(ad, &f("ack_delay"), 0, MAX_DELAY, a::ACK_DELAY)?)
        }
        // Default: a symmetric, uncongested return.
        (None, None) => AckRoute::Delay(idx.iter().map(|&l| links[l].delay).sum()),
    };
    Ok(PathSpec {
        name,
        links: idx,
        ack,
    })
}

/// Every link a flow sends data over must hold one full-size packet of it (a buffer given in
/// bytes) and send one within the run: otherwise every packet is dropped, or none arrives, and
/// the run reports a goodput of 0 that looks like a result.
pub(super) fn packets_fit(
    ctx: &Ctx,
    raw: &[RawLink],
    links: &[LinkSpec],
    paths: &[PathSpec],
    flows: &[FlowSpec],
    duration: Nanos,
) -> Result<(), ConfigError> {
    // The largest packet on each link and the flow that sends it; a full-size segment is
    // mss + headers on the wire for every kind (options come off the payload).
    let mut largest: Vec<Option<(u32, &FlowSpec)>> = vec![None; links.len()];
    for f in flows {
        let wire = f.mss + HEADER_BYTES;
        for &p in &f.paths {
            for &l in &paths[p].links {
                if largest[l].is_none_or(|(w, _)| wire > w) {
                    largest[l] = Some((wire, f));
                }
            }
        }
    }
    for (i, (l, big)) in links.iter().zip(&largest).enumerate() {
        let Some((wire, f)) = big else { continue };
        let what = format!(
            "one packet of flow {:?} ({wire} B on the wire: mss {} + {HEADER_BYTES} B of headers)",
            f.name, f.mss
        );
        if let (Buffer::Bytes(b), Some(span)) = (l.buffer, raw[i].buffer.as_ref()) {
            if b < u64::from(*wire) {
                return Err(ctx.err(
                    Some(span.span()),
                    format!("links[{i}].buffer"),
                    format!("{b} B cannot hold {what}, so every packet would be dropped"),
                    Some(&format!("at least \"{wire}B\", or a packet count")),
                ));
            }
        }
        let send_s = f64::from(*wire) * 8.0 / l.rate_bps as f64;
        let run_s = duration as f64 / 1e9;
        if send_s > run_s {
            return Err(ctx.err(
                Some(raw[i].rate.span()),
                format!("links[{i}].rate"),
                format!(
                    "{} bit/s takes {send_s} s to send {what}, longer than the run ({run_s} s)",
                    l.rate_bps
                ),
                Some(&format!(
                    "at least {} bit/s for this run",
                    (f64::from(*wire) * 8.0 / run_s).ceil()
                )),
            ));
        }
    }
    Ok(())
}
