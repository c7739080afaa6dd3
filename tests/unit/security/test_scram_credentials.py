"""SCRAM credentials in the metadata log: the controller's AlterUserScramCredentials (Kafka's
ScramControlManager rules), replay into the image, and a snapshot that keeps them."""

from __future__ import annotations

from gregor.controller.scram_control import ScramDeletion, ScramUpsertion, alter_user_scram_credentials
from gregor.metadata.delta import MetadataDelta
from gregor.metadata.image import MetadataImage
from gregor.metadata.snapshot import image_records
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.scram import ScramClient, ScramServer, salted_password

SALT = b"0123456789abcdef"


def _upsert(user: str, mechanism: int = 1, iterations: int = 4096, password: str = "pw") -> ScramUpsertion:
    name = "SCRAM-SHA-512" if mechanism == 2 else "SCRAM-SHA-256"
    return ScramUpsertion(user, mechanism, iterations, SALT, salted_password(name, password, SALT, iterations))


def _commit(image: MetadataImage, records) -> MetadataImage:
    delta = MetadataDelta(image)
    for offset, record in enumerate(records, image.highest_offset + 1):
        delta.replay(record, offset)
    return delta.apply()


def test_upserted_credentials_authenticate_and_survive_a_snapshot():
    result = alter_user_scram_credentials(MetadataImage(), [], [_upsert("alice"), _upsert("alice", 2, 8192)])
    assert [(r.user, r.error) for r in result.response] == [("alice", ErrorCode.NONE)]
    image = _commit(MetadataImage(), result.records)
    assert sorted(image.scram_credentials) == [("alice", 1), ("alice", 2)]
    assert image.scram_credentials[("alice", 2)].iterations == 8192
    server = ScramServer("SCRAM-SHA-256", lambda user: image.scram_credentials.get((user, 1)))
    client = ScramClient("SCRAM-SHA-256", "alice", "pw")
    client.verify(server.final(client.final(server.first(client.first()))))
    assert _commit(MetadataImage(), image_records(image)).scram_credentials == image.scram_credentials


def test_a_user_with_a_refused_change_keeps_its_credentials():
    image = _commit(MetadataImage(), alter_user_scram_credentials(MetadataImage(), [], [_upsert("bob")]).records)
    result = alter_user_scram_credentials(image, [ScramDeletion("bob", 1), ScramDeletion("carol", 1)],
                                          [_upsert("bob", 2, iterations=100), _upsert(""), _upsert("dave", 3)])
    assert [(r.user, r.error, r.message) for r in result.response] == [
        ("bob", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("carol", ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        ("", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        ("dave", ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")]
    assert result.records == ()


def test_deletion_and_duplicates():
    image = _commit(MetadataImage(), alter_user_scram_credentials(MetadataImage(), [], [_upsert("bob")]).records)
    twice = alter_user_scram_credentials(image, [ScramDeletion("bob", 1)], [_upsert("bob")])
    assert twice.response[0].error == ErrorCode.DUPLICATE_RESOURCE and twice.records == ()
    deleted = alter_user_scram_credentials(image, [ScramDeletion("bob", 1)], [])
    assert deleted.response[0].error == ErrorCode.NONE
    assert _commit(image, deleted.records).scram_credentials == {}
