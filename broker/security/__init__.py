"""Kafka's security model on kmock's listeners: TLS (SSL, SASL_SSL), SASL authentication
(PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) and the SCRAM credential store.

Part of `broker`: it may await. The SASL mechanisms themselves (plain.py, scram.py,
oauthbearer.py) are pure and synchronous, driven by the authenticator (authenticator.py).
"""
