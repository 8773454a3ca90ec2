use super::*;

fn load_with(
    toml_text: Option<&str>,
    env: &[(&str, &str)],
    overrides: Overrides,
) -> Result<Config, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    let mut overrides = overrides;
    if let Some(text) = toml_text {
        let path = dir.path().join("switchboard.toml");
        std::fs::write(&path, text).unwrap();
        overrides.config_path = Some(path);
    } else if overrides.config_path.is_none() {
        // Point at a file that does not exist on purpose? No: an absent file is "no file".
        overrides.config_path = None;
    }
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    Config::load(&overrides, env)
}

#[test]
fn no_config_at_all_gives_the_embedded_defaults() {
    let config = load_with(None, &[], Overrides::default()).unwrap();
    assert_eq!(config.server.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(config.storage.data_dir, PathBuf::from("./data"));
    assert_eq!(config.mail.transport, MailTransport::Log);
    assert_eq!(config.rate_limit.requests, 300);
    assert_eq!(config.rate_limit.window.0, Duration::from_secs(60));
    assert_eq!(config.auth.access_token_ttl.0, Duration::from_secs(900));
    assert_eq!(
        config.auth.refresh_token_ttl.0,
        Duration::from_secs(30 * 86_400)
    );
    assert!(config.matrix.is_none());
}

#[test]
fn the_example_file_parses_and_matches_the_defaults() {
    let text = include_str!("../../config.example.toml");
    let config = load_with(Some(text), &[], Overrides::default()).unwrap();
    let defaults = Config::default();
    assert_eq!(config.server.listen, defaults.server.listen);
    assert_eq!(config.storage.synchronous, defaults.storage.synchronous);
    assert_eq!(config.rate_limit.requests, defaults.rate_limit.requests);
    assert_eq!(config.auth.code_ttl, defaults.auth.code_ttl);
}

#[test]
fn environment_overrides_the_file_and_flags_override_both() {
    let text = "[server]\nlisten = \"127.0.0.1:9000\"\n[rate_limit]\nrequests = 10\n";
    let env = [
        ("SWITCHBOARD__RATE_LIMIT__REQUESTS", "42"),
        ("SWITCHBOARD__SERVER__LISTEN", "127.0.0.1:9001"),
        ("SWITCHBOARD__AUTH__ADMIN_EMAILS", "[\"a@example.org\"]"),
        (
            "SWITCHBOARD__BRIDGES__WHATSAPP__PROVISIONING_URL",
            "http://127.0.0.1:29318",
        ),
        ("UNRELATED", "x"),
    ];
    let overrides = Overrides {
        listen: Some("127.0.0.1:9002".into()),
        ..Overrides::default()
    };
    let config = load_with(Some(text), &env, overrides).unwrap();
    assert_eq!(config.rate_limit.requests, 42);
    assert_eq!(config.server.listen.to_string(), "127.0.0.1:9002");
    assert_eq!(config.auth.admin_emails, vec!["a@example.org".to_string()]);
    let whatsapp = config.bridges.whatsapp.unwrap();
    assert_eq!(
        whatsapp.provisioning_url.as_deref(),
        Some("http://127.0.0.1:29318")
    );
}

#[test]
fn an_unknown_key_is_an_error_naming_it() {
    let err = load_with(
        Some("[mail]\ntransprt = \"log\"\n"),
        &[],
        Overrides::default(),
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("mail"), "{text}");
    assert!(text.contains("transprt"), "{text}");
}

#[test]
fn a_bad_duration_is_an_error_naming_the_key() {
    let err = load_with(
        Some("[auth]\ncode_ttl = \"ten minutes\"\n"),
        &[],
        Overrides::default(),
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("auth.code_ttl"), "{text}");
    assert!(text.contains("invalid duration"), "{text}");
}

#[test]
fn a_bad_env_value_is_an_error_naming_the_key() {
    let err = load_with(
        None,
        &[("SWITCHBOARD__RATE_LIMIT__REQUESTS", "lots")],
        Overrides::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("rate_limit.requests"), "{err}");
}

#[test]
fn smtp_without_a_host_is_refused() {
    let err = load_with(
        Some("[mail]\ntransport = \"smtp\"\n"),
        &[],
        Overrides::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("mail.smtp_host"), "{err}");
}

#[test]
fn a_listen_address_that_is_not_an_address_is_refused() {
    let overrides = Overrides {
        listen: Some("localhost".into()),
        ..Overrides::default()
    };
    let err = load_with(None, &[], overrides).unwrap_err();
    assert!(err.to_string().contains("server.listen"), "{err}");
}

#[test]
fn secrets_are_not_printed_by_debug() {
    let text = "[matrix]\nhomeserver_url = \"http://127.0.0.1:8008\"\nserver_name = \"localhost\"\nregistration_shared_secret = \"hunter2\"\n";
    let config = load_with(Some(text), &[], Overrides::default()).unwrap();
    let printed = format!("{config:?}");
    assert!(!printed.contains("hunter2"));
    let serialized = toml::to_string(&config).unwrap();
    assert!(!serialized.contains("hunter2"));
}

#[test]
fn bridge_ghost_prefixes_parse_and_bad_ones_are_refused_by_key() {
    let ok = "[bridges.whatsapp]\nbot_user_id = \"@whatsappbot:hs\"\nghost_prefix = \"wa_\"\n";
    let config = load_with(Some(ok), &[], Overrides::default()).unwrap();
    let wa = config.bridges.whatsapp.unwrap();
    assert_eq!(wa.ghost_prefix.as_deref(), Some("wa_"));
    for bad in [
        "[bridges.telegram]\nghost_prefix = \"sb_\"\n",
        "[bridges.telegram]\nghost_prefix = \"\"\n",
    ] {
        let err = load_with(Some(bad), &[], Overrides::default()).unwrap_err();
        assert!(
            err.to_string().contains("bridges.telegram.ghost_prefix"),
            "{err}"
        );
    }
    let bad_bot = "[bridges.discord]\nbot_user_id = \"discordbot\"\n";
    let err = load_with(Some(bad_bot), &[], Overrides::default()).unwrap_err();
    assert!(
        err.to_string().contains("bridges.discord.bot_user_id"),
        "{err}"
    );
}

#[test]
fn the_metrics_listener_is_refused_on_a_public_address_unless_allowed() {
    let with = |listen: &str, allow: bool| {
        load_with(
            Some(&format!(
                "[metrics]\nlisten = \"{listen}\"\nallow_public = {allow}\n"
            )),
            &[],
            Overrides::default(),
        )
    };
    for internal in [
        "127.0.0.1:9100",
        "10.1.2.3:9100",
        "172.16.0.1:9100",
        "192.168.1.5:9100",
        "100.64.0.1:9100",
        "169.254.1.1:9100",
        "[::1]:9100",
        "[fd00::1]:9100",
        "[fe80::1]:9100",
        "[::ffff:10.0.0.1]:9100",
    ] {
        let c = with(internal, false).unwrap_or_else(|e| panic!("{internal}: {e}"));
        assert!(!c.metrics.allow_public);
    }
    for public in [
        "0.0.0.0:9100",
        "[::]:9100",
        "203.0.113.7:9100",
        "8.8.8.8:9100",
        "172.32.0.1:9100",
        "[2001:4860::1]:9100",
        "[::ffff:8.8.8.8]:9100",
    ] {
        let err = with(public, false).unwrap_err().to_string();
        assert!(
            err.contains("metrics.listen") && err.contains("allow_public"),
            "{public}: {err}"
        );
        let c = with(public, true).unwrap_or_else(|e| panic!("{public}: {e}"));
        assert!(c.metrics.allow_public);
    }
    // No listener: nothing to check.
    assert!(load_with(None, &[], Overrides::default())
        .unwrap()
        .metrics
        .listen
        .is_none());
}
