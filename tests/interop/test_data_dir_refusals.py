def test_a_sasl_ssl_listener_is_refused_not_served_as_plaintext(tmp_path):
    port = free_port()
    result = subprocess.run([sys.executable, "-m", "gregor.cli.main", "server",
                             "--override", f"listeners=SASL_SSL://127.0.0.1:{port}",
                             "--override", f"log.dirs={tmp_path / 'data'}"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"gregor server: listeners: SASL_SSL://127.0.0.1:{port} uses security protocol SASL_SSL, which Gregor does "
        f"not implement yet; refusing to serve it as plaintext (only PLAINTEXT listeners are supported)"]
    assert not os.path.exists(tmp_path / "data")
