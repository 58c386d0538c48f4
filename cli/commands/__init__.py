"""What the command families do, imported by each family's `run` when its command runs.

The parser is built from the light modules beside this package (`cli.topics`, ...); these
modules import the client, the record codecs and rich's tables, which `kmock --help`,
`kmock serve` and the other families never need.
"""
