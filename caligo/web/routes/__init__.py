"""The web app's routes, one router per resource: the page and its assets (`page`), the games
(`games`: creation, rematch, the list, reveals and downloads) and a seat's WebSocket (`seat`).
`deps` holds what they share: the hub, the bounded JSON body, the request models, the client
and the seat token."""
