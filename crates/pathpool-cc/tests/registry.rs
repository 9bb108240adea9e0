//! The catalogue and parameter validation of `build`.

mod common;

use common::{num, params};
use pathpool_cc::{build, catalog, CcError, ParamValue, Params};

const ALL: [&str; 12] = [
    "reno",
    "cubic",
    "ewtcp",
    "coupled",
    "semicoupled",
    "max",
    "lia",
    "olia",
    "balia",
    "generalized",
    "rsf-db",
    "rsf-lb",
];

#[test]
fn catalogue_lists_every_algorithm_once_and_each_builds_under_its_name() {
    let names: Vec<&str> = catalog().iter().map(|a| a.name).collect();
    assert_eq!(names, ALL);
    for info in catalog() {
        let c = build(info.name, &Params::new(), 3).unwrap();
        assert_eq!(c.name(), info.name);
        assert!(!info.summary.is_empty() && !info.source.is_empty() && !info.formula.is_empty());
    }
}

#[test]
fn coupled_flag_marks_the_algorithms_that_read_their_siblings() {
    let coupled: Vec<&str> = catalog()
        .iter()
        .filter(|a| a.coupled)
        .map(|a| a.name)
        .collect();
    assert_eq!(
        coupled,
        [
            "coupled",
            "semicoupled",
            "max",
            "lia",
            "olia",
            "balia",
            "generalized"
        ]
    );
}

#[test]
fn every_declared_parameter_accepts_a_value_of_its_type() {
    let good = |name: &str| match name {
        "alpha_every_ack" => ParamValue::Bool(true),
        "variant" => ParamValue::Text("kernel".into()),
        _ => num(2.0),
    };
    for info in catalog() {
        for p in info.params {
            let ps = params(&[(p.name, good(p.name))]);
            build(info.name, &ps, 2).unwrap_or_else(|e| panic!("{}.{}: {e}", info.name, p.name));
        }
    }
}

#[test]
fn unknown_algorithm_lists_the_allowed_names() {
    let err = build("bbr", &Params::new(), 1).unwrap_err();
    match &err {
        CcError::UnknownAlgorithm { name, allowed } => {
            assert_eq!(name, "bbr");
            assert_eq!(allowed, &ALL.to_vec());
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("rsf-lb"));
}

#[test]
fn unknown_parameter_names_the_allowed_ones() {
    let err = build("rsf-db", &params(&[("delay", num(0.1))]), 2).unwrap_err();
    assert_eq!(
        err,
        CcError::UnknownParam {
            algorithm: "rsf-db",
            param: "delay".into(),
            allowed: vec!["d"]
        }
    );
    let err = build("reno", &params(&[("a", num(1.0))]), 1).unwrap_err();
    assert!(err.to_string().contains("takes no parameters"), "{err}");
}

#[test]
fn wrong_type_and_out_of_range_values_are_rejected_with_the_allowed_values() {
    let cases: [(&str, &str, ParamValue); 9] = [
        ("ewtcp", "a", num(0.0)),
        ("ewtcp", "a", ParamValue::Text("1".into())),
        ("semicoupled", "a", num(-1.0)),
        ("semicoupled", "a", num(f64::NAN)),
        ("lia", "alpha_every_ack", num(1.0)),
        ("balia", "variant", ParamValue::Text("quantised".into())),
        ("generalized", "eta", num(-0.1)),
        ("rsf-db", "d", num(0.0)),
        ("rsf-lb", "loss_window", num(0.5)),
    ];
    for (alg, p, v) in cases {
        let err = build(alg, &params(&[(p, v.clone())]), 2).unwrap_err();
        match err {
            CcError::BadParam {
                algorithm,
                param,
                allowed,
                ..
            } => {
                assert_eq!((algorithm, param), (alg, p));
                let declared = catalog().iter().find(|a| a.name == alg).unwrap();
                let info = declared.params.iter().find(|q| q.name == p).unwrap();
                assert_eq!(allowed, info.allowed);
            }
            other => panic!("{alg}.{p}={v:?}: {other:?}"),
        }
    }
}

#[test]
fn zero_subflows_is_an_error() {
    assert_eq!(
        build("lia", &Params::new(), 0).unwrap_err(),
        CcError::NoSubflows
    );
}
