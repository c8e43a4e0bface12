"""The SDK check's scripted run of the Python client generated from the repository SDK document
(scripts/sdk-check.sh): log in, create a repository, find it in the list, and tell the typed 409
`conflict` of a second create with the same name. Type-checked with mypy
--strict together with the client, so a call that no longer matches the contract fails there first.

    python test/sdk/repository_smoke.py <base URL> <email>   (the password on stdin)
"""

import sys
import uuid

from repository_client import AuthenticatedClient, Client
from repository_client.api.authentication import login
from repository_client.api.repositories import create_repository, list_repositories
from repository_client.models import (
    ConflictError,
    ConflictErrorCode,
    Credentials,
    Repository,
    RepositoryCreate,
    RepositoryPage,
    TokenPair,
)


def main(base_url: str, email: str, password: str) -> None:
    tokens = login.sync(client=Client(base_url=base_url), body=Credentials(email=email, password=password))
    if not isinstance(tokens, TokenPair):
        raise SystemExit(f"login: expected a token pair, got {tokens!r}")
    user = AuthenticatedClient(base_url=base_url, token=tokens.access_token)
    name = f"py-sdk-{uuid.uuid4().hex[:8]}"
    created = create_repository.sync(client=user, body=RepositoryCreate(name=name))
    if not isinstance(created, Repository) or created.name != name or created.default_branch != "main":
        raise SystemExit(f"createRepository: expected {name} on main, got {created!r}")
    again = create_repository.sync(client=user, body=RepositoryCreate(name=name))
    if not isinstance(again, ConflictError) or again.code != ConflictErrorCode.CONFLICT:
        raise SystemExit(f"createRepository again: expected the 409 conflict, got {again!r}")
    page = list_repositories.sync(client=user, page=1, page_size=100)
    if not isinstance(page, RepositoryPage) or created.id not in [r.id for r in page.items]:
        raise SystemExit(f"listRepositories: {name} is not listed: {page!r}")
    print(f"python client: logged in, created {name}, listed {page.total_count} repositories")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.stdin.readline().rstrip("\n"))
