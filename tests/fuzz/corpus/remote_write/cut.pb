
l

__name__http_requests_