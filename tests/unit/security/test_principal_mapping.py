"""`ssl.principal.mapping.rules` as Kafka's SslPrincipalMapper reads them, and certificate
subjects written as Java's X500Principal does (RFC 2253, most specific name first)."""

from __future__ import annotations

import pytest

from gregor.broker.network import rfc2253_subject
from gregor.broker.security.principal_mapping import PrincipalMapper


def test_default_keeps_the_whole_subject():
    assert PrincipalMapper("DEFAULT").principal("CN=alice,OU=eng,O=example") == "User:CN=alice,OU=eng,O=example"


@pytest.mark.parametrize("rules, subject, name", [
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=kafka-svc,OU=ServiceUsers,O=Unknown", "kafka-svc"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=adminUser,OU=Admin,O=Unknown",
     "CN=adminUser,OU=Admin,O=Unknown"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/L", "CN=Alice,OU=ENG,O=example", "alice@eng"),
    ("RULE:^CN=(.*?),OU=(.*?)$/$1/U, DEFAULT", "CN=bob,OU=ops", "BOB"),
    ("RULE:^CN=([^,]+),O=(.*)$/$1\\/$2/", "CN=x,O=y", "x/y"),
])
def test_rules_apply_in_order(rules, subject, name):
    assert PrincipalMapper(rules).name(subject) == name


def test_a_subject_no_rule_matches_is_refused():
    with pytest.raises(ValueError, match="No rules apply to CN=eve"):
        PrincipalMapper("RULE:^CN=(.*),OU=eng$/$1/").name("CN=eve")


@pytest.mark.parametrize("rules", ["RULE:^CN=(.*$/$1/", "NONSENSE", "RULE:abc"])
def test_unreadable_rules_are_refused(rules):
    with pytest.raises(ValueError, match="ssl.principal.mapping.rules"):
        PrincipalMapper(rules)


def test_a_peer_certificate_subject_reads_as_rfc_2253():
    certificate = {"subject": ((("countryName", "US"),), (("organizationName", "Example, Inc."),),
                               (("organizationalUnitName", "eng"),), (("commonName", "alice"),))}
    assert rfc2253_subject(certificate) == "CN=alice,OU=eng,O=Example\\, Inc.,C=US"
