"""AlterUserScramCredentials (key 51), v0: SCRAM credentials set or removed by the active
controller (`gregor.controller.scram_control`) and committed to the metadata log before the answer;
a broker forwards it once the principal holds ALTER on the cluster (`forward_authorization`), as
in Kafka.
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.scram_control import ScramDeletion, ScramUpsertion, alter_user_scram_credentials
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse

API_KEY = 51
_Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult


def error_response(request: AlterUserScramCredentialsRequest, code: int,
                   message: str | None) -> AlterUserScramCredentialsResponse:
    users = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
    return AlterUserScramCredentialsResponse(results=[_Result(user=user, error_code=code, error_message=message)
                                                      for user in users])


async def handle(context: QuorumContext,
                 request: AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse:
    quorum = context.quorum
    deletions = [ScramDeletion(d.name, d.mechanism) for d in request.deletions]
    upsertions = [ScramUpsertion(u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password))
                  for u in request.upsertions]
    try:
        results = await quorum.submit(lambda: alter_user_scram_credentials(quorum.image, deletions, upsertions))
    except KafkaError as error:
        return error_response(request, error.code, str(error))
    return AlterUserScramCredentialsResponse(results=[
        _Result(user=r.user, error_code=r.error, error_message=r.message) for r in results])


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
