"""DescribeUserScramCredentials (key 50), v0: the mechanisms and iterations of users' SCRAM
credentials, from this broker's metadata image (never the keys). No users (null or empty) means
every user with a credential; a user named twice is answered DUPLICATE_RESOURCE and an unknown one
RESOURCE_NOT_FOUND, as in Kafka. The principal needs DESCRIBE on the cluster (else
CLUSTER_AUTHORIZATION_FAILED for the whole request), as in Kafka.
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse

API_KEY = 50
_Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
_Info = DescribeUserScramCredentialsResponse.CredentialInfo


def handle(context: BrokerContext,
           request: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse:
    if not context.allowed(AclOperation.DESCRIBE):
        return DescribeUserScramCredentialsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                    error_message="Cluster authorization failed.", results=[])
    credentials = context.metadata.image.scram_credentials
    by_user: dict[str, list[_Info]] = {}
    for (user, mechanism), credential in sorted(credentials.items()):
        by_user.setdefault(user, []).append(_Info(mechanism=mechanism, iterations=credential.iterations))
    names = [user.name for user in request.users or ()]
    results = []
    if not names:
        results = [_Result(user=user, error_code=0, error_message=None, credential_infos=infos)
                   for user, infos in by_user.items()]
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            results.append(_Result(user=name, error_code=ErrorCode.DUPLICATE_RESOURCE, credential_infos=[],
                                   error_message="Cannot describe SCRAM credentials for the same user twice in a "
                                                 "single request"))
        elif name not in by_user:
            results.append(_Result(user=name, error_code=ErrorCode.RESOURCE_NOT_FOUND, credential_infos=[],
                                   error_message="Attempt to describe nonexistent user"))
        else:
            results.append(_Result(user=name, error_code=0, error_message=None, credential_infos=by_user[name]))
    return DescribeUserScramCredentialsResponse(error_code=0, error_message=None, results=results)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
